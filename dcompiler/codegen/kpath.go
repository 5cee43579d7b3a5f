package codegen

import (
	"github.com/cilium/ebpf/asm"

	"github.com/dstar-trace/dstar/dcompiler/ast"
)

// maxPathSteps bounds the walk of a kernel path: each step is a
// component or a mount point crossed.
const maxPathSteps = 40

// mntInternal is the kernel's MNT_INTERNAL, in struct vfsmount's
// mnt_flags: a mount of its own, in no namespace.
const mntInternal = 0x4000

// kernelPath generates __dstar_path(dentry, vfsmount), the D library's
// d_path( ): the path of a dentry in a mount, from the root of the mount
// tree, built right to left by walking up d_parent and, at the root of a
// mount, on from its mount point in the parent mount, as the kernel's
// d_path does without its locks. (The kernel lets only fentry and LSM
// programs call d_path itself.) The walk stops at the root mount, at a
// dentry that is its own parent, after maxPathSteps, or when the path
// would not fit; what it found is the result, "/" if nothing.
func (pg *probeGen) kernelPath(e *ast.Call, base asm.Register, off, size int) error {
	mnt, err := pg.kernelOffset(e, "mount", "mnt")
	if err != nil {
		return err
	}
	var offs [6]int
	for i, m := range [][2]string{{"mount", "mnt_parent"}, {"mount", "mnt_mountpoint"}, {"vfsmount", "mnt_root"},
		{"dentry", "d_parent"}, {"dentry", "d_name"}, {"qstr", "len"}} {
		if offs[i], err = pg.kernelOffset(e, m[0], m[1]); err != nil {
			return err
		}
	}
	mntParent, mntPoint, mntRoot, dParent, dName, qLen := offs[0], offs[1], offs[2], offs[3], offs[4], offs[5]
	qName, err := pg.kernelOffset(e, "qstr", "name")
	if err != nil {
		return err
	}
	mntFlags, err := pg.kernelOffset(e, "vfsmount", "mnt_flags")
	if err != nil {
		return err
	}

	S := pg.in.Opts.StrSize
	const (
		vD, vM, vPos, vTmp, vP, vLen, vName = 0, 8, 16, 24, 32, 40, 48
	)
	vars := pg.allocScratch(56)
	buf := pg.allocScratch(2*S + 8) // the path ends at buf+S, before its NUL
	slot := func(v int) int16 { return int16(vars + v) }
	if err := pg.expr(e.Args[1]); err != nil {
		return err
	}
	pg.emit(asm.Sub.Imm(asm.R0, int32(mnt)), asm.StoreMem(regState, slot(vM), asm.R0, asm.DWord))
	if err := pg.expr(e.Args[0]); err != nil {
		return err
	}
	pg.emit(asm.StoreMem(regState, slot(vD), asm.R0, asm.DWord))
	pg.emit(storeImm(regState, slot(vPos), int64(S), asm.DWord))
	pg.emit(storeImm(regState, int16(buf+S), 0, asm.Byte))
	root, end, internal := pg.newLabel("path_root"), pg.newLabel("path_end"), pg.newLabel("path_internal")

	// read leaves in R0 the n bytes at the address in slot from, plus
	// at; 0 when the read fails.
	read := func(from, at, n int) {
		pg.emit(storeImm(regState, slot(vTmp), 0, asm.DWord))
		pg.addrOf(asm.R1, regState, vars+vTmp)
		pg.emit(asm.Mov.Imm(asm.R2, int32(n)))
		pg.emit(asm.LoadMem(asm.R3, regState, slot(from), asm.DWord), asm.Add.Imm(asm.R3, int32(at)))
		pg.call(asm.FnProbeReadKernel)
		pg.emit(asm.LoadMem(asm.R0, regState, slot(vTmp), sizeOf(n)))
	}
	// A file of a mount the kernel keeps to itself (MNT_INTERNAL: pipes,
	// sockets, anonymous inodes) has no path; the kernel's d_path makes
	// one up ("pipe:[1234]"), dstar says it does not know.
	read(vM, mnt+mntFlags, 4)
	pg.emit(asm.And.Imm(asm.R0, mntInternal), asm.JNE.Imm(asm.R0, 0, internal))
	// One step per iteration. The helpers the steps call take R0-R5, so
	// the count goes round through the stack, where the verifier keeps
	// its bounds.
	count, err := pg.push()
	if err != nil {
		return pg.errorf(e.Pos, "%v", err)
	}
	defer func() { pg.depth-- }()
	pg.loop(asm.R5, 0, maxPathSteps, func(done string) {
		next, inMount := pg.newLabel("path_next"), pg.newLabel("path_in_mount")
		pg.emit(asm.StoreMem(asm.RFP, count, asm.R5, asm.DWord))
		read(vM, mnt+mntRoot, 8)
		pg.emit(asm.LoadMem(asm.R1, regState, slot(vD), asm.DWord))
		pg.emit(asm.JNE.Reg(asm.R0, asm.R1, inMount))
		// At the root of a mount: on from its mount point, in its parent.
		read(vM, mntParent, 8)
		pg.emit(asm.JEq.Imm(asm.R0, 0, done))
		pg.emit(asm.LoadMem(asm.R1, regState, slot(vM), asm.DWord))
		pg.emit(asm.JEq.Reg(asm.R0, asm.R1, done)) // the root mount
		pg.emit(asm.StoreMem(regState, slot(vP), asm.R0, asm.DWord))
		read(vM, mntPoint, 8)
		pg.emit(asm.StoreMem(regState, slot(vD), asm.R0, asm.DWord))
		pg.emit(asm.LoadMem(asm.R0, regState, slot(vP), asm.DWord))
		pg.emit(asm.StoreMem(regState, slot(vM), asm.R0, asm.DWord))
		pg.emit(asm.Ja.Label(next))

		// A component: "/" and its name go before what is built.
		pg.label(inMount)
		read(vD, dParent, 8)
		pg.emit(asm.JEq.Imm(asm.R0, 0, done))
		pg.emit(asm.LoadMem(asm.R1, regState, slot(vD), asm.DWord))
		pg.emit(asm.JEq.Reg(asm.R0, asm.R1, done))
		pg.emit(asm.StoreMem(regState, slot(vP), asm.R0, asm.DWord))
		read(vD, dName+qName, 8)
		pg.emit(asm.StoreMem(regState, slot(vName), asm.R0, asm.DWord))
		read(vD, dName+qLen, 4)
		pg.emit(asm.JGT.Imm(asm.R0, int32(S-1), done))
		pg.emit(asm.StoreMem(regState, slot(vLen), asm.R0, asm.DWord))
		// The new start: pos - len - 1, which must stay in the buffer.
		pg.emit(asm.LoadMem(asm.R2, regState, slot(vPos), asm.DWord))
		pg.emit(asm.Sub.Reg(asm.R2, asm.R0), asm.Sub.Imm(asm.R2, 1))
		pg.emit(asm.JSLT.Imm(asm.R2, 0, done), asm.JGT.Imm(asm.R2, int32(S), done))
		pg.emit(asm.StoreMem(regState, slot(vPos), asm.R2, asm.DWord))
		pg.addrOf(asm.R1, regState, buf)
		pg.emit(asm.Add.Reg(asm.R1, asm.R2))
		pg.emit(storeImm(asm.R1, 0, '/', asm.Byte))
		pg.emit(asm.JEq.Imm(asm.R0, 0, pg.labelNext("path_noname")))
		pg.emit(asm.Add.Imm(asm.R1, 1), asm.Mov.Reg(asm.R2, asm.R0))
		pg.emit(asm.LoadMem(asm.R3, regState, slot(vName), asm.DWord))
		pg.call(asm.FnProbeReadKernel)
		pg.label(pg.lastLabel)
		pg.emit(asm.LoadMem(asm.R0, regState, slot(vP), asm.DWord))
		pg.emit(asm.StoreMem(regState, slot(vD), asm.R0, asm.DWord))
		pg.label(next)
		pg.emit(asm.LoadMem(asm.R5, asm.RFP, count, asm.DWord))
	})
	pg.emit(asm.LoadMem(asm.R3, regState, slot(vPos), asm.DWord))
	pg.emit(asm.JSGE.Imm(asm.R3, int32(S), root), asm.JSLT.Imm(asm.R3, 0, root))
	pg.addrOf(asm.R1, regState, buf)
	pg.emit(asm.Add.Reg(asm.R3, asm.R1))
	pg.addrOf(asm.R1, base, off)
	pg.emit(asm.Mov.Imm(asm.R2, int32(size)))
	pg.call(asm.FnProbeReadKernelStr)
	pg.emit(asm.Ja.Label(end))
	pg.label(root)
	pg.literal("/", base, off, size)
	pg.emit(asm.Ja.Label(end))
	pg.label(internal)
	pg.literal("<unknown>", base, off, size)
	pg.label(end)
	return nil
}

// kernelOffset is the offset of member name in the kernel's struct st.
func (pg *probeGen) kernelOffset(e *ast.Call, st, name string) (int, error) {
	offs, _, err := structOffsets(st, []string{name})
	if err != nil || len(offs) != 1 {
		return 0, pg.errorf(e.Pos, "%s( ) needs kernel BTF: %v", e.Fn, err)
	}
	return offs[0], nil
}
