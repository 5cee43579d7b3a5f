// Package deploy holds what runs dstar on a fleet: the container image
// (Dockerfile) and the Kubernetes manifests (kubernetes/). Its tests decode
// every manifest strictly into the Kubernetes API's types, check the
// DaemonSet against what dstar needs from a node (host PID namespace,
// capabilities, tracefs and BTF mounts, scripts, probes, the Service and
// its scrape annotations), and run dstar with exactly the capabilities the
// DaemonSet grants to show that each is needed and that together they
// suffice.
package deploy
