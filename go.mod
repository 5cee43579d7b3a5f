module github.com/dstar-trace/dstar

go 1.26.0

require (
	github.com/cilium/ebpf v0.22.0
	github.com/peterh/liner v1.2.3
	go.starlark.net v0.0.0-20260908191801-89a6a09411d5
	golang.org/x/sys v0.50.0
)

require (
	github.com/clipperhouse/uax29/v2 v2.7.0 // indirect
	github.com/mattn/go-runewidth v0.0.31 // indirect
)
