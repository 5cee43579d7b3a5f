/*
 * sched.d: the processor view of DTrace's sched provider (cpuinfo_t),
 * translated from a task_struct (the processor it runs or is queued on),
 * and curcpu for the current one. dstar loads this file before every
 * program.
 */

struct cpuinfo {
	int cpu_id;		/* the processor's number */
	int cpu_pset;		/* its processor set: -1, Linux has none */
};
typedef struct cpuinfo cpuinfo_t;

translator cpuinfo_t < struct task_struct *T > {
	cpu_id = T->thread_info.cpu;
	cpu_pset = -1;
};

inline cpuinfo_t *curcpu = xlate <cpuinfo_t *> (curthread);
