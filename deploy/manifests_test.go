package deploy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
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
	c := dstarContainer(ds)
	if c == nil {
		t.Fatalf("DaemonSet %s has no container named dstar", ds.Name)
	}
	return ds, c
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

// daemonSetProblems lists what in the DaemonSet would keep dstar from
// doing its work on a node.
func daemonSetProblems(ds *appsv1.DaemonSet, c *corev1.Container, scripts *corev1.ConfigMap) (p problems) {
	pod := &ds.Spec.Template.Spec

	sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil || sel.Empty() || !sel.Matches(labels.Set(ds.Spec.Template.Labels)) {
		p.add("DaemonSet selector %v does not select its pods (%v): %v", ds.Spec.Selector, ds.Spec.Template.Labels, err)
	}
	if c.Image == "" {
		p.add("the dstar container has no image")
	}

	// The host's processes: pid and usdt probes, /proc/PID/maps and
	// /proc/PID/root for user stacks.
	if !pod.HostPID {
		p.add("hostPID is not set: dstar would see only the pod's processes")
	}
	if pod.HostUsers != nil && !*pod.HostUsers {
		p.add("hostUsers is false: in a user namespace CAP_BPF and CAP_PERFMON count for nothing")
	}

	// Runs everywhere, and has time to detach.
	everywhere := slices.ContainsFunc(pod.Tolerations, func(tol corev1.Toleration) bool {
		return tol.Key == "" && tol.Operator == corev1.TolerationOpExists && tol.Effect == ""
	})
	if !everywhere {
		p.add("tolerations %v: none tolerates every taint, so tainted nodes run no dstar", pod.Tolerations)
	}
	if g := pod.TerminationGracePeriodSeconds; g == nil || *g < 30 {
		p.add("terminationGracePeriodSeconds %v: want at least 30 for dstar to detach its probes", g)
	}

	// Capabilities, not privilege.
	sc := c.SecurityContext
	if sc == nil || sc.Capabilities == nil {
		p.add("the dstar container sets no capabilities")
		return p
	}
	if sc.Privileged != nil && *sc.Privileged {
		p.add("the dstar container is privileged: it needs only its capabilities")
	}
	if !slices.Contains(sc.Capabilities.Drop, "ALL") {
		p.add("capabilities drop %v, want ALL: the runtime's default set is more than dstar needs", sc.Capabilities.Drop)
	}
	var added []string
	for _, cp := range sc.Capabilities.Add {
		added = append(added, strings.TrimPrefix(string(cp), "CAP_"))
	}
	slices.Sort(added)
	if !slices.Equal(added, neededCaps) {
		p.add("capabilities add %v, want %v", added, neededCaps)
	}
	for _, f := range forbiddenCaps {
		if slices.Contains(added, f) {
			p.add("capabilities add %s, which dstar does not need", f)
		}
	}
	if sc.RunAsUser == nil || *sc.RunAsUser != 0 {
		p.add("runAsUser %v, want 0: a non-root process gets none of the container's capabilities", sc.RunAsUser)
	}
	// The runtime's default seccomp profile (containerd's) refuses bpf(2)
	// and perf_event_open(2) without CAP_SYS_ADMIN; its default AppArmor
	// profile refuses reading other containers' /proc/PID/maps.
	seccomp := sc.SeccompProfile
	if seccomp == nil && pod.SecurityContext != nil {
		seccomp = pod.SecurityContext.SeccompProfile
	}
	if seccomp == nil || seccomp.Type == corev1.SeccompProfileTypeRuntimeDefault {
		p.add("seccomp profile %v: the runtime's default (which a kubelet may apply when none is set) refuses bpf(2) without CAP_SYS_ADMIN", seccomp)
	}
	apparmor := sc.AppArmorProfile
	if apparmor == nil && pod.SecurityContext != nil {
		apparmor = pod.SecurityContext.AppArmorProfile
	}
	if apparmor == nil || apparmor.Type == corev1.AppArmorProfileTypeRuntimeDefault {
		p.add("AppArmor profile %v: the runtime's default refuses reading the /proc/PID/maps of processes outside the container", apparmor)
	}

	// Mounts: the host's tracefs and BTF, read-only; no host path
	// writable.
	for _, want := range []string{tracefsPath, btfPath} {
		vm, vol := mountAt(pod, c, want)
		switch {
		case vm == nil:
			p.add("nothing is mounted at %s", want)
		case vol == nil || vol.HostPath == nil || vol.HostPath.Path != want:
			p.add("%s is not the host's %s: %+v", want, want, vol)
		case !vm.ReadOnly:
			p.add("%s is mounted read-write: dstar only reads it", want)
		}
	}
	for _, vm := range c.VolumeMounts {
		_, vol := mountAt(pod, c, vm.MountPath)
		if vol != nil && vol.HostPath != nil && !vm.ReadOnly {
			p.add("host path %s is mounted read-write at %s", vol.HostPath.Path, vm.MountPath)
		}
	}

	// Arguments: serve, on every interface of the pod, the ConfigMap's
	// scripts.
	flags, paths, ok := serveArgs(c.Args)
	if len(c.Command) != 0 {
		p.add("command %v replaces the image's entrypoint (/dstar)", c.Command)
	}
	if !ok {
		p.add("args %v do not start with serve", c.Args)
		return p
	}
	host, port, err := net.SplitHostPort(flags["listen"])
	if err != nil {
		p.add("args %v: --listen %q: %v", c.Args, flags["listen"], err)
		return p
	}
	if host != "" && host != "0.0.0.0" && host != "::" {
		p.add("--listen %s: the kubelet and Prometheus reach the pod's address, not %s", flags["listen"], host)
	}
	var listenPort int32
	for _, cp := range c.Ports {
		if strconv.Itoa(int(cp.ContainerPort)) == port {
			listenPort = cp.ContainerPort
			if cp.Name != "metrics" {
				p.add("container port %d is named %q, want metrics", cp.ContainerPort, cp.Name)
			}
		}
	}
	if listenPort != metricsPort {
		p.add("--listen port %s is not the container port %d (ports %v)", port, metricsPort, c.Ports)
	}
	if len(paths) == 0 {
		p.add("args %v name no scripts", c.Args)
	}
	for _, dir := range paths {
		vm, vol := mountAt(pod, c, dir)
		if vm == nil || vol == nil || vol.ConfigMap == nil {
			p.add("script directory %s is not a ConfigMap volume's mount", dir)
			continue
		}
		if vm.SubPath != "" {
			p.add("%s mounts a subPath, which the kubelet never updates", dir)
		}
		if vol.ConfigMap.Name != scripts.Name {
			p.add("script directory %s is ConfigMap %q, want %q", dir, vol.ConfigMap.Name, scripts.Name)
		}
	}

	// Probes: /healthz on the port dstar listens on.
	for name, pr := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		if pr == nil || pr.HTTPGet == nil {
			p.add("no HTTP %s probe", name)
			continue
		}
		if pr.HTTPGet.Path != "/healthz" {
			p.add("%s probe path %q, want /healthz", name, pr.HTTPGet.Path)
		}
		if got, ok := portOf(c, pr.HTTPGet.Port); !ok || got != listenPort {
			p.add("%s probe port %s is not the port dstar listens on (%d)", name, pr.HTTPGet.Port.String(), listenPort)
		}
	}

	// Resources: a memory limit, which BPF maps count against.
	req, lim := c.Resources.Requests, c.Resources.Limits
	if req.Memory().IsZero() || req.Cpu().IsZero() {
		p.add("resource requests %v: want cpu and memory", req)
	}
	if lim.Memory().IsZero() || lim.Memory().Cmp(*req.Memory()) < 0 {
		p.add("memory limit %v: want one at least the request %v", lim.Memory(), req.Memory())
	}

	// A read-only root needs somewhere to write files scripts make.
	if sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem {
		if vm, vol := mountAt(pod, c, "/tmp"); vm == nil || vol == nil || vol.EmptyDir == nil || vm.ReadOnly {
			p.add("the root file system is read-only and /tmp is no writable emptyDir")
		}
	}

	p.scrapeAnnotations("the DaemonSet's pod template", ds.Spec.Template.Annotations, listenPort)
	return p
}

// scrapeAnnotations checks that the prometheus.io annotations point at
// dstar's /metrics on port.
func (p *problems) scrapeAnnotations(what string, a map[string]string, port int32) {
	want := map[string]string{
		"prometheus.io/scrape": "true",
		"prometheus.io/port":   strconv.Itoa(int(port)),
		"prometheus.io/path":   "/metrics",
	}
	for k, v := range want {
		if a[k] != v {
			p.add("%s: annotation %s=%q, want %q", what, k, a[k], v)
		}
	}
}

// serviceProblems lists what in the Service would keep Prometheus from
// scraping every node's dstar.
func serviceProblems(svc *corev1.Service, ds *appsv1.DaemonSet, c *corev1.Container) (p problems) {
	if len(svc.Spec.Selector) == 0 || !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(ds.Spec.Template.Labels)) {
		p.add("Service selector %v does not select the DaemonSet's pods (%v)", svc.Spec.Selector, ds.Spec.Template.Labels)
	}
	if svc.Spec.ClusterIP != corev1.ClusterIPNone {
		p.add("Service clusterIP %q, want None: each node's numbers are its own, not to be load-balanced", svc.Spec.ClusterIP)
	}
	var found bool
	for _, sp := range svc.Spec.Ports {
		if sp.Name != "metrics" {
			continue
		}
		found = true
		target := sp.TargetPort
		if target.Type == intstr.Int && target.IntVal == 0 {
			target = intstr.FromInt32(sp.Port)
		}
		got, ok := portOf(c, target)
		if !ok || got != metricsPort || sp.Port != metricsPort {
			p.add("Service port metrics is %d → %s, want %d → the container's %d", sp.Port, target.String(), metricsPort, metricsPort)
		}
		p.scrapeAnnotations("the Service", svc.Annotations, sp.Port)
	}
	if !found {
		p.add("the Service has no port named metrics: %v", svc.Spec.Ports)
	}
	return p
}

// problems collects what a check finds wrong, one sentence each.
type problems []string

func (p *problems) add(format string, args ...any) {
	*p = append(*p, fmt.Sprintf(format, args...))
}

// dstarContainer returns the DaemonSet's container named dstar, or nil.
func dstarContainer(ds *appsv1.DaemonSet) *corev1.Container {
	for i := range ds.Spec.Template.Spec.Containers {
		if c := &ds.Spec.Template.Spec.Containers[i]; c.Name == "dstar" {
			return c
		}
	}
	return nil
}

func TestDaemonSetGivesDstarWhatItNeeds(t *testing.T) {
	m := loadManifests(t)
	ds, c := m.daemonSet(t)
	for _, p := range daemonSetProblems(ds, c, m.configMaps[0]) {
		t.Errorf("%s: %s", m.file[ds], p)
	}
}

func TestServiceScrapesEveryPod(t *testing.T) {
	m := loadManifests(t)
	ds, c := m.daemonSet(t)
	svc := m.services[0]
	for _, p := range serviceProblems(svc, ds, c) {
		t.Errorf("%s: %s", m.file[svc], p)
	}
}

// TestChecksCatchBreakage breaks the manifests one way at a time and
// checks that the DaemonSet's and Service's checks say what is wrong.
func TestChecksCatchBreakage(t *testing.T) {
	yes, no := true, false
	mount := func(c *corev1.Container, path string) *corev1.VolumeMount {
		for i := range c.VolumeMounts {
			if c.VolumeMounts[i].MountPath == path {
				return &c.VolumeMounts[i]
			}
		}
		t.Fatalf("no mount at %s", path)
		return nil
	}
	setArgs := func(c *corev1.Container, args ...string) { c.Args = args }
	for _, tc := range []struct {
		name    string
		breakIt func(ds *appsv1.DaemonSet, c *corev1.Container, svc *corev1.Service)
		want    string
	}{
		{"no host PID namespace", func(ds *appsv1.DaemonSet, c *corev1.Container, svc *corev1.Service) {
			ds.Spec.Template.Spec.HostPID = false
		}, "hostPID is not set"},
		{"a user namespace", func(ds *appsv1.DaemonSet, c *corev1.Container, svc *corev1.Service) {
			ds.Spec.Template.Spec.HostUsers = &no
		}, "hostUsers is false"},
		{"privileged", func(ds *appsv1.DaemonSet, c *corev1.Container, svc *corev1.Service) {
			c.SecurityContext.Privileged = &yes
		}, "is privileged"},
		{"CAP_SYS_ADMIN", func(ds *appsv1.DaemonSet, c *corev1.Container, svc *corev1.Service) {
			c.SecurityContext.Capabilities.Add = append(c.SecurityContext.Capabilities.Add, "CAP_SYS_ADMIN")
		}, "capabilities add SYS_ADMIN"},
		{"no CAP_PERFMON", func(ds *appsv1.DaemonSet, c *corev1.Container, svc *corev1.Service) {
			c.SecurityContext.Capabilities.Add = []corev1.Capability{"BPF", "DAC_READ_SEARCH", "SYSLOG", "SYS_PTRACE"}
		}, "capabilities add [BPF DAC_READ_SEARCH SYSLOG SYS_PTRACE], want"},
		{"default capabilities kept", func(ds *appsv1.DaemonSet, c *corev1.Container, svc *corev1.Service) {
			c.SecurityContext.Capabilities.Drop = nil
		}, "want ALL"},
		{"runtime's seccomp profile", func(ds *appsv1.DaemonSet, c *corev1.Container, svc *corev1.Service) {
			c.SecurityContext.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
		}, "seccomp profile"},
		{"runtime's AppArmor profile", func(ds *appsv1.DaemonSet, c *corev1.Container, svc *corev1.Service) {
			c.SecurityContext.AppArmorProfile = nil
		}, "AppArmor profile"},
		{"tracefs writable", func(ds *appsv1.DaemonSet, c *corev1.Container, svc *corev1.Service) {
			mount(c, tracefsPath).ReadOnly = false
		}, "/sys/kernel/tracing is mounted read-write"},
		{"no BTF", func(ds *appsv1.DaemonSet, c *corev1.Container, svc *corev1.Service) {
			mount(c, btfPath).MountPath = "/btf"
		}, "nothing is mounted at /sys/kernel/btf"},
		{"not serve", func(ds *appsv1.DaemonSet, c *corev1.Container, svc *corev1.Service) {
			setArgs(c, "run", "/etc/dstar/scripts/syscalls.star")
		}, "do not start with serve"},
		{"listening on loopback", func(ds *appsv1.DaemonSet, c *corev1.Container, svc *corev1.Service) {
			setArgs(c, "serve", "--listen=127.0.0.1:9469", "/etc/dstar/scripts")
		}, "not 127.0.0.1"},
		{"listening on another port", func(ds *appsv1.DaemonSet, c *corev1.Container, svc *corev1.Service) {
			setArgs(c, "serve", "-listen", ":9000", "/etc/dstar/scripts")
		}, "--listen port 9000 is not the container port"},
		{"scripts not from the ConfigMap", func(ds *appsv1.DaemonSet, c *corev1.Container, svc *corev1.Service) {
			setArgs(c, "serve", "--listen", ":9469", "/scripts")
		}, "/scripts is not a ConfigMap volume's mount"},
		{"liveness on /metrics", func(ds *appsv1.DaemonSet, c *corev1.Container, svc *corev1.Service) {
			c.LivenessProbe.HTTPGet.Path = "/metrics"
		}, "liveness probe path"},
		{"readiness on another port", func(ds *appsv1.DaemonSet, c *corev1.Container, svc *corev1.Service) {
			c.ReadinessProbe.HTTPGet.Port = intstr.FromInt32(8080)
		}, "readiness probe port 8080"},
		{"no toleration", func(ds *appsv1.DaemonSet, c *corev1.Container, svc *corev1.Service) {
			ds.Spec.Template.Spec.Tolerations = nil
		}, "none tolerates every taint"},
		{"pod annotation on another port", func(ds *appsv1.DaemonSet, c *corev1.Container, svc *corev1.Service) {
			ds.Spec.Template.Annotations["prometheus.io/port"] = "9000"
		}, `pod template: annotation prometheus.io/port="9000"`},
		{"Service on another port", func(ds *appsv1.DaemonSet, c *corev1.Container, svc *corev1.Service) {
			svc.Spec.Ports[0].TargetPort = intstr.FromString("http")
		}, "Service port metrics is 9469 → http"},
		{"Service not scraped", func(ds *appsv1.DaemonSet, c *corev1.Container, svc *corev1.Service) {
			delete(svc.Annotations, "prometheus.io/scrape")
		}, `the Service: annotation prometheus.io/scrape=""`},
		{"Service selecting nothing", func(ds *appsv1.DaemonSet, c *corev1.Container, svc *corev1.Service) {
			svc.Spec.Selector = map[string]string{"app": "other"}
		}, "does not select the DaemonSet's pods"},
	} {
		m := loadManifests(t)
		ds, c := m.daemonSet(t)
		svc := m.services[0]
		tc.breakIt(ds, c, svc)
		all := append(daemonSetProblems(ds, c, m.configMaps[0]), serviceProblems(svc, ds, c)...)
		if !slices.ContainsFunc(all, func(p string) bool { return strings.Contains(p, tc.want) }) {
			t.Errorf("%s: no problem says %q; found %q", tc.name, tc.want, all)
		}
	}
}
