package elfsym

import (
	"bytes"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// Separate debug files, found as GDB finds them: by the file's build ID
// under /usr/lib/debug/.build-id/xx/yyyy.debug (a distribution's debug
// package), or by the name and CRC-32 its .gnu_debuglink section gives,
// beside the file, in a .debug directory beside it, or under
// /usr/lib/debug with the file's own directory.

// debugDir is where debug files are installed; a variable for tests.
var debugDir = "/usr/lib/debug"

// ErrNoDebugFile says that no separate debug file was found for a file.
var ErrNoDebugFile = errors.New("no debug file")

// DebugFile returns the symbols of f's separate debug file: a stripped
// library's local functions (libc's __libc_start_call_main) are named
// only there. Its symbols have f's virtual addresses. A debug file found
// by build ID must carry the same build ID, and one found by
// .gnu_debuglink the CRC-32 the link gives, so that a stale debug file
// never names the wrong code. It fails, wrapping ErrNoDebugFile, when
// none is found.
func DebugFile(f *File) (*File, error) {
	for _, p := range debugPaths(f) {
		d, err := Open(p)
		if err != nil {
			continue
		}
		if len(f.BuildID) > 0 && len(d.BuildID) > 0 && !bytes.Equal(f.BuildID, d.BuildID) {
			continue
		}
		return d, nil
	}
	if f.debugLink != "" {
		for _, p := range linkPaths(f) {
			if crc, err := fileCRC(p); err == nil && crc == f.debugCRC {
				if d, err := Open(p); err == nil {
					return d, nil
				}
			}
		}
	}
	return nil, fmt.Errorf("%s: %w", f.Path, ErrNoDebugFile)
}

// debugPaths are where f's debug file lies by its build ID.
func debugPaths(f *File) []string {
	if len(f.BuildID) < 2 {
		return nil
	}
	return []string{BuildIDPath(debugDir, f.BuildID)}
}

// BuildIDPath is the path of the debug file of build ID id in the
// .build-id tree under root.
func BuildIDPath(root string, id []byte) string {
	h := hex.EncodeToString(id)
	return filepath.Join(root, ".build-id", h[:2], h[2:]+".debug")
}

// linkPaths are where f's .gnu_debuglink file may lie, in GDB's order.
func linkPaths(f *File) []string {
	dir := filepath.Dir(f.Path)
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return []string{
		filepath.Join(dir, f.debugLink),
		filepath.Join(dir, ".debug", f.debugLink),
		filepath.Join(debugDir, dir, f.debugLink),
	}
}

// debugLink reads ef's .gnu_debuglink: a NUL-terminated file name,
// padded to 4 bytes, then the debug file's CRC-32.
func debugLink(ef *elf.File) (string, uint32) {
	sec := ef.Section(".gnu_debuglink")
	if sec == nil {
		return "", 0
	}
	b, err := sec.Data()
	if err != nil {
		return "", 0
	}
	n := bytes.IndexByte(b, 0)
	crcAt := (n + 4) &^ 3
	if n <= 0 || crcAt+4 > len(b) {
		return "", 0
	}
	name := string(b[:n])
	if filepath.Base(name) != name {
		return "", 0 // a name, never a path
	}
	return name, ef.ByteOrder.Uint32(b[crcAt:])
}

// crcs caches fileCRC's results by file version: a debug file is tens
// of MiB, and symbolisation asks again whenever its own cache restarts.
var crcs = struct {
	sync.Mutex
	m map[cacheKey]uint32
}{m: map[cacheKey]uint32{}}

// fileCRC is the CRC-32 (IEEE, as .gnu_debuglink's) of the file at path.
func fileCRC(path string) (uint32, error) {
	r, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	var st syscall.Stat_t
	if err := syscall.Fstat(int(r.Fd()), &st); err != nil {
		return 0, err
	}
	key := cacheKey{path, uint64(st.Dev), st.Ino, st.Size, st.Mtim.Nano()}
	crcs.Lock()
	crc, ok := crcs.m[key]
	crcs.Unlock()
	if ok {
		return crc, nil
	}
	h := crc32.NewIEEE()
	if _, err := io.Copy(h, r); err != nil {
		return 0, err
	}
	crcs.Lock()
	if len(crcs.m) >= 1024 {
		clear(crcs.m)
	}
	crcs.m[key] = h.Sum32()
	crcs.Unlock()
	return h.Sum32(), nil
}
