/*
 * procfs.d: the process and thread views of DTrace's proc and sched
 * providers (psinfo_t, lwpsinfo_t), translated from the kernel's
 * task_struct, and curpsinfo / curlwpsinfo for the current thread.
 * dstar loads this file before every program.
 */

/* Why a process exited: proc:::exit args[0]. */
inline int CLD_EXITED = 1;
inline int CLD_KILLED = 2;
inline int CLD_DUMPED = 3;

/* Thread states, as lwpsinfo_t's pr_state gives them. */
inline char SSLEEP = 1;
inline char SRUN = 2;
inline char SZOMB = 3;
inline char SSTOP = 4;
inline char SIDL = 5;
inline char SONPROC = 6;
inline char SWAIT = 7;

struct psinfo {
	int pr_nlwp;		/* threads in the process */
	pid_t pr_pid;
	pid_t pr_ppid;
	pid_t pr_pgid;
	pid_t pr_sid;
	uid_t pr_uid;
	uid_t pr_euid;
	gid_t pr_gid;
	gid_t pr_egid;
	uintptr_t pr_addr;	/* the kernel's task_struct */
	char pr_fname[16];	/* the command name (comm) */
	char pr_psargs[80];	/* the arguments, for the current process */
};
typedef struct psinfo psinfo_t;

struct lwpsinfo {
	int pr_flag;
	id_t pr_lwpid;		/* the thread id */
	uintptr_t pr_addr;
	char pr_state;		/* SSLEEP, SRUN, ... */
	char pr_sname;		/* 'S', 'R', ... */
	short pr_syscall;
	int pr_pri;		/* the kernel's priority (lower runs first) */
	int pr_onpro;		/* the processor it last ran on */
	int pr_bindpro;
	char pr_name[16];
};
typedef struct lwpsinfo lwpsinfo_t;

translator psinfo_t < struct task_struct *T > {
	pr_nlwp = T->signal->nr_threads;
	pr_pid = T->tgid;
	pr_ppid = T->real_parent->tgid;
	/* The process group and session: the first number of pids[2], [3]. */
	pr_pgid = ((struct upid *)((uintptr_t)T->signal->pids[2] +
	    offsetof(struct pid, numbers)))->nr;
	pr_sid = ((struct upid *)((uintptr_t)T->signal->pids[3] +
	    offsetof(struct pid, numbers)))->nr;
	pr_uid = T->cred->uid.val;
	pr_euid = T->cred->euid.val;
	pr_gid = T->cred->gid.val;
	pr_egid = T->cred->egid.val;
	pr_addr = (uintptr_t)T;
	pr_fname = T->comm;
	/*
	 * A process's arguments are in its own memory, which a probe can
	 * read only when it runs in that process; elsewhere, and for kernel
	 * threads, this is the command name, as for a process without
	 * arguments.
	 */
	pr_psargs = T == curthread && T->mm != NULL && T->mm->arg_end > T->mm->arg_start ?
	    __dstar_args(T->mm->arg_start, T->mm->arg_end - T->mm->arg_start) :
	    T->comm;
};

translator lwpsinfo_t < struct task_struct *T > {
	pr_flag = T->flags;
	pr_lwpid = T->pid;
	pr_addr = (uintptr_t)T;
	pr_state = T->exit_state != 0 ? SZOMB :
	    T->__state == 0 ? (T->on_cpu ? SONPROC : SRUN) :
	    (T->__state & 0x3) ? SSLEEP : (T->__state & 0x4) ? SSTOP : SWAIT;
	pr_sname = T->exit_state != 0 ? 'Z' :
	    T->__state == 0 ? (T->on_cpu ? 'O' : 'R') :
	    (T->__state & 0x3) ? 'S' : (T->__state & 0x4) ? 'T' : 'W';
	pr_pri = T->prio;
	pr_onpro = T->thread_info.cpu;
	pr_bindpro = -1;
	pr_name = T->comm;
};

inline psinfo_t *curpsinfo = xlate <psinfo_t *> (curthread);
inline lwpsinfo_t *curlwpsinfo = xlate <lwpsinfo_t *> (curthread);
