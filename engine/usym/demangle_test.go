package usym

import "testing"

// TestDemangle: C++ and Rust (legacy and v0) names print as perf prints
// them, and other names are left alone.
func TestDemangle(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"_ZNSt6vectorIiSaIiEE9push_backERKi", "std::vector<int, std::allocator<int> >::push_back"},
		{"_ZN2ns3BoxIiE4spinERKi", "ns::Box<int>::spin"},
		{"_ZNK3Foo3barEv", "Foo::bar"},
		{"_ZN3FooC2Ev", "Foo::Foo"},
		{"_Z3fooi.constprop.0", "foo"},
		{"_ZZ4mainENKUlvE_clEv", "main::{lambda()#1}::operator()"},
		// Rust, legacy: the hash goes.
		{"_ZN4core3ptr13drop_in_place17h1234567890abcdefE", "core::ptr::drop_in_place"},
		{"_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h0123456789abcdefE", "std::rt::lang_start::{{closure}}"},
		// Rust, v0: the crate's disambiguator goes.
		{"_RNvCs1234_7mycrate3foo", "mycrate::foo"},
		{"_RNvNtCs9ltgdHTiPiY_4core3ptr13drop_in_place", "core::ptr::drop_in_place"},
		{"main", "main"},
		{"_start", "_start"},
		{"_Znot_really", "_Znot_really"},
		{"runtime.main", "runtime.main"},
	} {
		if got := Demangle(tc.in); got != tc.want {
			t.Errorf("Demangle(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func BenchmarkDemangle(b *testing.B) {
	const name = "_ZNSt6vectorIiSaIiEE9push_backERKi"
	b.Run("cached", func(b *testing.B) {
		for b.Loop() {
			Demangle(name)
		}
	})
	b.Run("uncached", func(b *testing.B) {
		for b.Loop() {
			clear(names.m)
			Demangle(name)
		}
	})
}
