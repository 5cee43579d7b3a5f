package check

import (
	"errors"
	"strconv"
	"strings"
)

// D's language versions, as DTrace numbers them. A program may ask for an
// earlier one (-x version=1.0, #pragma D option version=1.0): the names
// later versions made built-in are then free for its own variables.
var versions = []string{"1.0", "1.1", "1.2", "1.2.1", "1.2.2", "1.3", "1.4", "1.4.1", "1.5",
	"1.6", "1.6.1", "1.6.2", "1.6.3", "1.6.4", "2.0"}

// addedIn is the version that made each of these names built-in; the
// others are D 1.0's.
var addedIn = map[string]string{
	"freopen": "1.1", "index": "1.1", "rindex": "1.1", "strchr": "1.1", "strrchr": "1.1",
	"strstr": "1.1", "strtok": "1.1", "substr": "1.1",
	"func": "1.2", "mod": "1.2", "setopt": "1.2", "sym": "1.2", "uaddr": "1.2", "ucaller": "1.2",
	"ufunc": "1.2", "umod": "1.2", "ustackdepth": "1.2", "usym": "1.2",
	"htonl": "1.3", "htonll": "1.3", "htons": "1.3", "ntohl": "1.3", "ntohll": "1.3", "ntohs": "1.3",
	"inet_ntoa": "1.5", "inet_ntoa6": "1.5", "inet_ntop": "1.5", "link_ntop": "1.5",
	"stddev": "1.6", "llquantize": "1.6.4", "pcap": "1.6.4", "print": "2.0",
}

// versionNum encodes a version as DTrace does, so that later ones are
// greater: major.minor[.micro].
func versionNum(s string) (uint32, bool) {
	parts := strings.Split(s, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, false
	}
	limits := []uint64{0xff, 0xfff, 0xfff}
	var n uint32
	for i := 0; i < 3; i++ {
		var v uint64
		if i < len(parts) {
			var err error
			if v, err = strconv.ParseUint(parts[i], 10, 32); err != nil || v > limits[i] {
				return 0, false
			}
		}
		n = n<<12 | uint32(v)
	}
	return n, true
}

// VersionProblem says what is wrong with a requested version, in
// dtrace's words, or returns nil.
func VersionProblem(s string) error {
	n, ok := versionNum(s)
	if !ok {
		return errors.New("Version is not properly formatted or is too large")
	}
	for _, v := range versions {
		if m, _ := versionNum(v); m == n {
			return nil
		}
	}
	return errors.New("Requested version is not supported by compiler")
}

// hidden reports whether built-in name is newer than the version the
// program asked for.
func (in *Info) hidden(name string) bool {
	added, ok := addedIn[name]
	if !ok {
		return false
	}
	want := in.Opts.Version
	if want == "" {
		want = in.Options["version"]
	}
	w, ok := versionNum(want)
	if !ok {
		return false
	}
	a, _ := versionNum(added)
	return a > w
}
