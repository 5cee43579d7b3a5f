package elfsym

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"

	"github.com/ulikunitz/xz"
)

// MiniDebugInfo, as Fedora and Debian ship it (GDB's "MiniDebugInfo"):
// a stripped file carries a .gnu_debugdata section holding an
// xz-compressed ELF file whose .symtab names the local functions .dynsym
// leaves out, at the stripped file's own addresses. It is what names a
// distribution binary's static functions when no debug package is
// installed.

// maxMiniDebug bounds the decompressed MiniDebugInfo: a symbol table of
// a few hundred KiB is usual, and a corrupt or hostile section must not
// exhaust memory.
const maxMiniDebug = 64 << 20

// miniDebugSymbols returns the symbols of ef's MiniDebugInfo, nil when
// it has none.
func miniDebugSymbols(ef *elf.File) ([]elf.Symbol, error) {
	sec := ef.Section(".gnu_debugdata")
	if sec == nil {
		return nil, nil
	}
	raw, err := sec.Data()
	if err != nil {
		return nil, err
	}
	r, err := xz.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("not xz data: %w", err)
	}
	data, err := io.ReadAll(io.LimitReader(r, maxMiniDebug+1))
	if err != nil {
		return nil, fmt.Errorf("decompressing: %w", err)
	}
	if len(data) > maxMiniDebug {
		return nil, fmt.Errorf("over %d MiB decompressed", maxMiniDebug>>20)
	}
	inner, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("not an ELF file: %w", err)
	}
	syms, err := inner.Symbols()
	if errors.Is(err, elf.ErrNoSymbols) {
		return nil, nil
	}
	return syms, err
}
