/*
 * sched.d: the processor view of DTrace's sched provider (cpuinfo_t),
 * translated from a task_struct (the processor it runs or is queued on),
 * and the variables that read curcpu's, the current one's. dstar loads
 * this file before every program.
 */

typedef id_t processorid_t;
typedef id_t psetid_t;
typedef id_t chipid_t;
typedef id_t lgrp_id_t;

/*
 * curcpu points at the current processor's record, which dstar fills in
 * for each processor before tracing starts (a per-CPU BPF map): a real
 * pointer, which may be stored and compared like any other.
 */
struct cpuinfo {
	processorid_t cpu_id;	/* the processor's number */
	psetid_t cpu_pset;	/* its processor set: -1, Linux has none */
	chipid_t cpu_chip;	/* its physical package (socket) */
	lgrp_id_t cpu_lgrp;	/* its locality group: its NUMA node */
};
typedef struct cpuinfo cpuinfo_t;

/*
 * The processor a task runs or is queued on, for the sched provider's
 * arguments; its package and node are known only through curcpu.
 */
translator cpuinfo_t < struct task_struct *T > {
	cpu_id = T->thread_info.cpu;
	cpu_pset = -1;
};

inline psetid_t pset = curcpu->cpu_pset;
inline chipid_t chip = curcpu->cpu_chip;
inline lgrp_id_t lgrp = curcpu->cpu_lgrp;
