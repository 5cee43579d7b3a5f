package engine

import "testing"

// TestOptionNames: every option Oracle DTrace or illumos takes is known,
// so that one dstar lacks is refused as unsupported, not as a bad name.
func TestOptionNames(t *testing.T) {
	for _, name := range []string{"aggpack", "agghist", "aggzoom", "quietresize", "lockmem", "pcapsize", "bpflog"} {
		if err := CheckOption(name, ""); err == nil || err.Error() != "failed to set -x "+name+": unsupported option" {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := CheckOption("nosuch", ""); err == nil || err.Error() != "failed to set -x nosuch: Invalid option name" {
		t.Errorf("nosuch: %v", err)
	}
}
