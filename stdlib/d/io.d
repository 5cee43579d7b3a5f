/*
 * io.d: the views of DTrace's io provider (bufinfo_t, devinfo_t,
 * fileinfo_t), translated from the kernel's struct request. dstar loads
 * this file before every program.
 */

/* bufinfo_t's b_flags: the direction of the transfer. */
inline int B_BUSY = 0x000001;
inline int B_DONE = 0x000002;
inline int B_ERROR = 0x000004;
inline int B_PAGEIO = 0x000010;
inline int B_PHYS = 0x000020;
inline int B_READ = 0x000040;
inline int B_WRITE = 0x000100;
inline int B_ASYNC = 0x000400;

struct bufinfo {
	int b_flags;		/* B_READ or B_WRITE, and B_ASYNC */
	size_t b_bcount;	/* bytes to transfer */
	uintptr_t b_addr;	/* the kernel's struct request */
	uint64_t b_blkno;	/* first 512-byte block on the device */
	uint64_t b_lblkno;
	size_t b_resid;
	size_t b_bufsize;
	uintptr_t b_iodone;
	int b_error;
	uint64_t b_edev;	/* the device's dev_t, as Linux encodes it */
};
typedef struct bufinfo bufinfo_t;

struct devinfo {
	int dev_major;
	int dev_minor;
	int dev_instance;
	char dev_name[32];	/* the disk: "vda", "sda", "loop0" */
	char dev_statname[32];
	char dev_pathname[40];	/* "/dev/" and the disk's name */
};
typedef struct devinfo devinfo_t;

struct fileinfo {
	char fi_name[16];
	char fi_dirname[16];
	char fi_pathname[16];
	int64_t fi_offset;
	char fi_fs[16];
	char fi_mount[16];
	int fi_oflags;
};
typedef struct fileinfo fileinfo_t;

/*
 * Linux encodes a request's operation in the low 8 bits of cmd_flags:
 * 0 is a read, and writes (write, discard, write zeroes, ...) are the odd
 * ones; others, such as a cache flush, are neither. REQ_SYNC (bit 11)
 * marks synchronous I/O.
 */
translator bufinfo_t < struct request *R > {
	b_flags = ((R->cmd_flags & 0xff) == 0 ? B_READ :
	    (R->cmd_flags & 1) ? B_WRITE : 0) |
	    ((R->cmd_flags & 0x800) ? 0 : B_ASYNC);
	b_bcount = R->__data_len;
	b_addr = (uintptr_t)R;
	b_blkno = R->__sector;
	b_lblkno = R->__sector;
	b_resid = 0;
	b_bufsize = R->__data_len;
	b_iodone = 0;
	b_error = 0;
	b_edev = R->part != NULL ? R->part->bd_dev : 0;
};

translator devinfo_t < struct request *R > {
	dev_major = R->q->disk->major;
	dev_minor = R->q->disk->first_minor;
	dev_instance = R->q->disk->first_minor;
	dev_name = R->q->disk->disk_name;
	dev_statname = R->q->disk->disk_name;
	dev_pathname = strjoin("/dev/", R->q->disk->disk_name);
};

/* A block request does not know the file it serves. */
translator fileinfo_t < struct request *R > {
	fi_name = "<none>";
	fi_dirname = "<none>";
	fi_pathname = "<none>";
	fi_offset = -1;
	fi_fs = "<none>";
	fi_mount = "<none>";
	fi_oflags = 0;
};

/*
 * fds[]: the current process's open files, translated from the struct
 * file its file table holds for each descriptor. __dstar_path(dentry,
 * vfsmount) is dstar's d_path( ): the kernel lets only fentry and LSM
 * programs call its own.
 */
translator fileinfo_t < struct file *F > {
	fi_name = F == NULL ? "<none>" : stringof(F->f_path.dentry->d_name.name);
	fi_dirname = F == NULL ? "<none>" : dirname(__dstar_path(F->f_path.dentry, F->f_path.mnt));
	fi_pathname = F == NULL ? "<none>" : __dstar_path(F->f_path.dentry, F->f_path.mnt);
	fi_offset = F == NULL ? -1 : F->f_pos;
	fi_fs = F == NULL ? "<none>" : stringof(F->f_inode->i_sb->s_type->name);
	fi_mount = F == NULL ? "<none>" : __dstar_path(F->f_path.mnt->mnt_root, F->f_path.mnt);
	fi_oflags = F == NULL ? 0 : F->f_flags;
};

inline fileinfo_t fds[int fd] = xlate <fileinfo_t> (fd >= 0 && fd < curthread->files->fdt->max_fds ?
    curthread->files->fdt->fd[fd] : NULL);
