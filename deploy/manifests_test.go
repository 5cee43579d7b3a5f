package deploy

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// manifestDir holds the manifests `kubectl apply -f` is given.
const manifestDir = "kubernetes"

// What dstar needs from a node, as the code reads it.
const (
	// providers/tracefs looks for tracefs here first (then in debugfs,
	// /sys/kernel/debug/tracing, only when this has no events).
	tracefsPath = "/sys/kernel/tracing"
	// cilium/ebpf reads the kernel's BTF from vmlinux in this directory
	// (and modules' BTF beside it).
	btfPath = "/sys/kernel/btf"
	// The agent's port (starlark/agent's default listen address's).
	metricsPort = 9469
)

// neededCaps are the capabilities the DaemonSet adds, as the comment at
// its top explains; TestCapabilities shows that each is needed and that
// together they suffice.
var neededCaps = []string{"BPF", "DAC_READ_SEARCH", "PERFMON", "SYSLOG", "SYS_PTRACE"}

// forbiddenCaps are capabilities the DaemonSet must not add: SYS_ADMIN
// (all dstar would do with it is mount tracefs, which the pod mounts from
// the host, and copyout()), and those that would only widen what a
// compromised agent could do.
var forbiddenCaps = []string{"SYS_ADMIN", "SYS_MODULE", "SYS_RAWIO", "NET_ADMIN", "DAC_OVERRIDE", "SYS_RESOURCE"}

// manifests are the objects of deploy/kubernetes, with the file each came
// from.
type manifests struct {
	namespaces []*corev1.Namespace
	accounts   []*corev1.ServiceAccount
	configMaps []*corev1.ConfigMap
	daemonSets []*appsv1.DaemonSet
	services   []*corev1.Service
	file       map[runtime.Object]string
}

// strictDecoder decodes YAML or JSON into the core and apps API groups'
// types, failing on unknown fields (case matters) and duplicate fields, as
// `kubectl apply --validate=strict` does.
func strictDecoder() runtime.Decoder {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme} {
		if err := add(scheme); err != nil {
			panic(err)
		}
	}
	return serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
}

// decodeDocuments decodes every YAML document of data; a document that
// holds only comments is skipped.
func decodeDocuments(dec runtime.Decoder, data []byte) ([]runtime.Object, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []runtime.Object
	for n := 1; ; n++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		if onlyComments(doc) {
			continue
		}
		obj, _, err := dec.Decode(doc, nil, nil)
		if err != nil {
			return nil, errors.New("document " + strconv.Itoa(n) + ": " + err.Error())
		}
		objs = append(objs, obj)
	}
}

func onlyComments(doc []byte) bool {
	for line := range strings.Lines(string(doc)) {
		line = strings.TrimSpace(line)
		if line != "" && line != "---" && !strings.HasPrefix(line, "#") {
			return false
		}
	}
	return true
}

// loadManifests decodes every file of deploy/kubernetes strictly.
func loadManifests(t *testing.T) *manifests {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(manifestDir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no manifests in %s", manifestDir)
	}
	dec := strictDecoder()
	m := &manifests{file: map[runtime.Object]string{}}
	for _, f := range files {
		if ext := filepath.Ext(f); ext != ".yaml" && ext != ".yml" && ext != ".json" {
			t.Errorf("%s: kubectl apply -f %s/ reads only .yaml, .yml and .json files", f, manifestDir)
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := decodeDocuments(dec, data)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		for _, obj := range objs {
			m.file[obj] = f
			switch o := obj.(type) {
			case *corev1.Namespace:
				m.namespaces = append(m.namespaces, o)
			case *corev1.ServiceAccount:
				m.accounts = append(m.accounts, o)
			case *corev1.ConfigMap:
				m.configMaps = append(m.configMaps, o)
			case *appsv1.DaemonSet:
				m.daemonSets = append(m.daemonSets, o)
			case *corev1.Service:
				m.services = append(m.services, o)
			default:
				t.Errorf("%s: a %T, which these tests do not check", f, obj)
			}
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	return m
}

// daemonSet returns the one DaemonSet and its dstar container.
func (m *manifests) daemonSet(t *testing.T) (*appsv1.DaemonSet, *corev1.Container) {
	t.Helper()
	if len(m.daemonSets) != 1 {
		t.Fatalf("%d DaemonSets in %s, want 1", len(m.daemonSets), manifestDir)
	}
	ds := m.daemonSets[0]
	for i := range ds.Spec.Template.Spec.Containers {
		if c := &ds.Spec.Template.Spec.Containers[i]; c.Name == "dstar" {
			return ds, c
		}
	}
	t.Fatalf("DaemonSet %s has no container named dstar", ds.Name)
	return nil, nil
}

func TestManifestsDecodeStrictly(t *testing.T) {
	m := loadManifests(t)
	for _, c := range []struct {
		kind string
		n    int
	}{
		{"Namespace", len(m.namespaces)}, {"ServiceAccount", len(m.accounts)},
		{"ConfigMap", len(m.configMaps)}, {"DaemonSet", len(m.daemonSets)}, {"Service", len(m.services)},
	} {
		if c.n != 1 {
			t.Errorf("%d %ss, want 1", c.n, c.kind)
		}
	}
}

// TestStrictDecoderRefuses shows the decoder is strict: what a lenient one
// would take silently, it refuses.
func TestStrictDecoderRefuses(t *testing.T) {
	dec := strictDecoder()
	for _, c := range []struct{ name, doc, want string }{
		{"unknown field", "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: a}\nautomount: false\n", `unknown field "automount"`},
		{"field of another case", "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: a}\nspec:\n  template:\n    spec:\n      hostPid: true\n", `unknown field "spec.template.spec.hostPid"`},
		{"duplicate field", "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: a}\nmetadata: {name: b}\n", `"metadata" already set`},
		{"unknown kind", "apiVersion: v1\nkind: Gadget\nmetadata: {name: a}\n", `no kind "Gadget"`},
	} {
		_, err := decodeDocuments(dec, []byte(c.doc))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %s", c.name, err, c.want)
		}
	}
	objs, err := decodeDocuments(dec, []byte("# only a comment\n---\napiVersion: v1\nkind: ServiceAccount\nmetadata: {name: a}\n"))
	if err != nil || len(objs) != 1 {
		t.Errorf("a comment and a ServiceAccount: %d objects, %v; want 1, nil", len(objs), err)
	}
}

// TestNamespaceAdmitsTheAgent checks that every object lives in the one
// namespace, which admits privileged pods, and that the DaemonSet runs as
// the ServiceAccount defined beside it.
func TestNamespaceAdmitsTheAgent(t *testing.T) {
	m := loadManifests(t)
	ns := m.namespaces[0]
	if got := ns.Labels["pod-security.kubernetes.io/enforce"]; got != "privileged" {
		t.Errorf("namespace %s: pod-security.kubernetes.io/enforce=%q, want privileged: hostPID, host paths and added capabilities are refused by baseline", ns.Name, got)
	}
	var objs []metav1.Object
	for _, o := range m.accounts {
		objs = append(objs, o)
	}
	for _, o := range m.configMaps {
		objs = append(objs, o)
	}
	for _, o := range m.daemonSets {
		objs = append(objs, o)
	}
	for _, o := range m.services {
		objs = append(objs, o)
	}
	for _, o := range objs {
		if o.GetNamespace() != ns.Name {
			t.Errorf("%s: namespace %q, want %q", o.GetName(), o.GetNamespace(), ns.Name)
		}
	}
	ds, _ := m.daemonSet(t)
	pod := ds.Spec.Template.Spec
	if pod.ServiceAccountName != m.accounts[0].Name {
		t.Errorf("DaemonSet runs as service account %q, want %q", pod.ServiceAccountName, m.accounts[0].Name)
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Errorf("DaemonSet mounts a service account token: dstar never calls the Kubernetes API")
	}
}

// serveArgs splits `serve FLAGS... PATHS...` as Go's flag package does.
func serveArgs(args []string) (flags map[string]string, paths []string, ok bool) {
	if len(args) == 0 || args[0] != "serve" {
		return nil, nil, false
	}
	flags = map[string]string{}
	i := 1
	for ; i < len(args) && strings.HasPrefix(args[i], "-"); i++ {
		if args[i] == "--" {
			i++
			break
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		if !hasVal && i+1 < len(args) {
			i++
			val = args[i]
		}
		flags[name] = val
	}
	return flags, args[i:], true
}

// portOf resolves a probe's or a Service's port against c's ports.
func portOf(c *corev1.Container, p intstr.IntOrString) (int32, bool) {
	for _, cp := range c.Ports {
		if p.Type == intstr.String && cp.Name == p.StrVal || p.Type == intstr.Int && cp.ContainerPort == p.IntVal {
			return cp.ContainerPort, true
		}
	}
	return 0, false
}

// mountAt returns c's mount at path and the pod's volume it mounts.
func mountAt(pod *corev1.PodSpec, c *corev1.Container, path string) (*corev1.VolumeMount, *corev1.Volume) {
	for i := range c.VolumeMounts {
		vm := &c.VolumeMounts[i]
		if vm.MountPath != path {
			continue
		}
		for j := range pod.Volumes {
			if pod.Volumes[j].Name == vm.Name {
				return vm, &pod.Volumes[j]
			}
		}
		return vm, nil
	}
	return nil, nil
}

func TestDaemonSetGivesDstarWhatItNeeds(t *testing.T) {
	m := loadManifests(t)
	ds, c := m.daemonSet(t)
	pod := &ds.Spec.Template.Spec

	sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil || sel.Empty() || !sel.Matches(labels.Set(ds.Spec.Template.Labels)) {
		t.Errorf("DaemonSet selector %v does not select its pods (%v): %v", ds.Spec.Selector, ds.Spec.Template.Labels, err)
	}
	if c.Image == "" {
		t.Error("the dstar container has no image")
	}

	// The host's processes: pid and usdt probes, /proc/PID/maps and
	// /proc/PID/root for user stacks.
	if !pod.HostPID {
		t.Error("hostPID is not set: dstar would see only the pod's processes")
	}
	if pod.HostUsers != nil && !*pod.HostUsers {
		t.Error("hostUsers is false: in a user namespace CAP_BPF and CAP_PERFMON count for nothing")
	}

	// Runs everywhere, and has time to detach.
	everywhere := slices.ContainsFunc(pod.Tolerations, func(tol corev1.Toleration) bool {
		return tol.Key == "" && tol.Operator == corev1.TolerationOpExists && tol.Effect == ""
	})
	if !everywhere {
		t.Errorf("tolerations %v: none tolerates every taint, so tainted nodes run no dstar", pod.Tolerations)
	}
	if g := pod.TerminationGracePeriodSeconds; g == nil || *g < 30 {
		t.Errorf("terminationGracePeriodSeconds %v: want at least 30 for dstar to detach its probes", g)
	}

	// Capabilities, not privilege.
	sc := c.SecurityContext
	if sc == nil || sc.Capabilities == nil {
		t.Fatal("the dstar container sets no capabilities")
	}
	if sc.Privileged != nil && *sc.Privileged {
		t.Error("the dstar container is privileged: it needs only its capabilities")
	}
	if !slices.Contains(sc.Capabilities.Drop, "ALL") {
		t.Errorf("capabilities drop %v, want ALL: the runtime's default set is more than dstar needs", sc.Capabilities.Drop)
	}
	var added []string
	for _, cp := range sc.Capabilities.Add {
		added = append(added, strings.TrimPrefix(string(cp), "CAP_"))
	}
	slices.Sort(added)
	if !slices.Equal(added, neededCaps) {
		t.Errorf("capabilities add %v, want %v", added, neededCaps)
	}
	for _, f := range forbiddenCaps {
		if slices.Contains(added, f) {
			t.Errorf("capabilities add %s, which dstar does not need", f)
		}
	}
	if sc.RunAsUser == nil || *sc.RunAsUser != 0 {
		t.Errorf("runAsUser %v, want 0: a non-root process gets none of the container's capabilities", sc.RunAsUser)
	}
	// The runtime's default seccomp profile (containerd's) refuses bpf(2)
	// and perf_event_open(2) without CAP_SYS_ADMIN; its default AppArmor
	// profile refuses reading other containers' /proc/PID/maps.
	seccomp := sc.SeccompProfile
	if seccomp == nil && pod.SecurityContext != nil {
		seccomp = pod.SecurityContext.SeccompProfile
	}
	if seccomp == nil || seccomp.Type == corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("seccomp profile %v: the runtime's default (which a kubelet may apply when none is set) refuses bpf(2) without CAP_SYS_ADMIN", seccomp)
	}
	apparmor := sc.AppArmorProfile
	if apparmor == nil && pod.SecurityContext != nil {
		apparmor = pod.SecurityContext.AppArmorProfile
	}
	if apparmor == nil || apparmor.Type == corev1.AppArmorProfileTypeRuntimeDefault {
		t.Errorf("AppArmor profile %v: the runtime's default refuses reading the /proc/PID/maps of processes outside the container", apparmor)
	}

	// Mounts: the host's tracefs and BTF, read-only; no host path
	// writable.
	for _, want := range []string{tracefsPath, btfPath} {
		vm, vol := mountAt(pod, c, want)
		switch {
		case vm == nil:
			t.Errorf("nothing is mounted at %s", want)
		case vol == nil || vol.HostPath == nil || vol.HostPath.Path != want:
			t.Errorf("%s is not the host's %s: %+v", want, want, vol)
		case !vm.ReadOnly:
			t.Errorf("%s is mounted read-write: dstar only reads it", want)
		}
	}
	for _, vm := range c.VolumeMounts {
		_, vol := mountAt(pod, c, vm.MountPath)
		if vol != nil && vol.HostPath != nil && !vm.ReadOnly {
			t.Errorf("host path %s is mounted read-write at %s", vol.HostPath.Path, vm.MountPath)
		}
	}

	// Arguments: serve, on every interface of the pod, the ConfigMap's
	// scripts.
	flags, paths, ok := serveArgs(c.Args)
	if len(c.Command) != 0 {
		t.Errorf("command %v replaces the image's entrypoint (/dstar)", c.Command)
	}
	if !ok {
		t.Fatalf("args %v do not start with serve", c.Args)
	}
	host, port, err := net.SplitHostPort(flags["listen"])
	if err != nil {
		t.Fatalf("args %v: --listen %q: %v", c.Args, flags["listen"], err)
	}
	if host != "" && host != "0.0.0.0" && host != "::" {
		t.Errorf("--listen %s: the kubelet and Prometheus reach the pod's address, not %s", flags["listen"], host)
	}
	var listenPort int32
	for _, cp := range c.Ports {
		if strconv.Itoa(int(cp.ContainerPort)) == port {
			listenPort = cp.ContainerPort
			if cp.Name != "metrics" {
				t.Errorf("container port %d is named %q, want metrics", cp.ContainerPort, cp.Name)
			}
		}
	}
	if listenPort != metricsPort {
		t.Errorf("--listen port %s is not the container port %d (ports %v)", port, metricsPort, c.Ports)
	}
	if len(paths) == 0 {
		t.Errorf("args %v name no scripts", c.Args)
	}
	for _, p := range paths {
		vm, vol := mountAt(pod, c, p)
		if vm == nil || vol == nil || vol.ConfigMap == nil {
			t.Errorf("script directory %s is not a ConfigMap volume's mount", p)
			continue
		}
		if vm.SubPath != "" {
			t.Errorf("%s mounts a subPath, which the kubelet never updates", p)
		}
		if vol.ConfigMap.Name != m.configMaps[0].Name {
			t.Errorf("script directory %s is ConfigMap %q, want %q", p, vol.ConfigMap.Name, m.configMaps[0].Name)
		}
	}

	// Probes: /healthz on the port dstar listens on.
	for name, p := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil {
			t.Errorf("no HTTP %s probe", name)
			continue
		}
		if p.HTTPGet.Path != "/healthz" {
			t.Errorf("%s probe path %q, want /healthz", name, p.HTTPGet.Path)
		}
		if got, ok := portOf(c, p.HTTPGet.Port); !ok || got != listenPort {
			t.Errorf("%s probe port %s is not the port dstar listens on (%d)", name, p.HTTPGet.Port.String(), listenPort)
		}
	}

	// Resources: a memory limit, which BPF maps count against.
	req, lim := c.Resources.Requests, c.Resources.Limits
	if req.Memory().IsZero() || req.Cpu().IsZero() {
		t.Errorf("resource requests %v: want cpu and memory", req)
	}
	if lim.Memory().IsZero() || lim.Memory().Cmp(*req.Memory()) < 0 {
		t.Errorf("memory limit %v: want one at least the request %v", lim.Memory(), req.Memory())
	}

	// A read-only root needs somewhere to write files scripts make.
	if sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem {
		if vm, vol := mountAt(pod, c, "/tmp"); vm == nil || vol == nil || vol.EmptyDir == nil || vm.ReadOnly {
			t.Error("the root file system is read-only and /tmp is no writable emptyDir")
		}
	}

	checkScrapeAnnotations(t, "the DaemonSet's pod template", ds.Spec.Template.Annotations, listenPort)
}

// checkScrapeAnnotations checks the prometheus.io annotations point at
// dstar's /metrics on port.
func checkScrapeAnnotations(t *testing.T, what string, a map[string]string, port int32) {
	t.Helper()
	want := map[string]string{
		"prometheus.io/scrape": "true",
		"prometheus.io/port":   strconv.Itoa(int(port)),
		"prometheus.io/path":   "/metrics",
	}
	for k, v := range want {
		if a[k] != v {
			t.Errorf("%s: annotation %s=%q, want %q", what, k, a[k], v)
		}
	}
}

func TestServiceScrapesEveryPod(t *testing.T) {
	m := loadManifests(t)
	ds, c := m.daemonSet(t)
	svc := m.services[0]
	if len(svc.Spec.Selector) == 0 || !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(ds.Spec.Template.Labels)) {
		t.Errorf("Service selector %v does not select the DaemonSet's pods (%v)", svc.Spec.Selector, ds.Spec.Template.Labels)
	}
	if svc.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("Service clusterIP %q, want None: each node's numbers are its own, not to be load-balanced", svc.Spec.ClusterIP)
	}
	var found bool
	for _, p := range svc.Spec.Ports {
		if p.Name != "metrics" {
			continue
		}
		found = true
		target := p.TargetPort
		if target.Type == intstr.Int && target.IntVal == 0 {
			target = intstr.FromInt32(p.Port)
		}
		got, ok := portOf(c, target)
		if !ok || got != metricsPort || p.Port != metricsPort {
			t.Errorf("Service port metrics is %d → %s, want %d → the container's %d", p.Port, target.String(), metricsPort, metricsPort)
		}
		checkScrapeAnnotations(t, "the Service", svc.Annotations, p.Port)
	}
	if !found {
		t.Errorf("the Service has no port named metrics: %v", svc.Spec.Ports)
	}
}
