package deploy_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
	"gopkg.in/yaml.v3"

	"github.com/lanewatch/lanewatch/config"
)

// The manifests are decoded strictly into these types, which model the part
// of the Kubernetes API the manifests use: a misspelt key is an error, not
// a field the cluster silently ignores.

type meta struct {
	Name        string            `yaml:"name"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

type header struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   meta   `yaml:"metadata"`
}

type configMap struct {
	header `yaml:",inline"`
	Data   map[string]string `yaml:"data"`
}

type secret struct {
	header     `yaml:",inline"`
	Type       string            `yaml:"type"`
	StringData map[string]string `yaml:"stringData"`
	Data       map[string]string `yaml:"data"`
}

type servicePort struct {
	Name       string `yaml:"name"`
	Port       int    `yaml:"port"`
	TargetPort any    `yaml:"targetPort"`
}

type service struct {
	header `yaml:",inline"`
	Spec   struct {
		ClusterIP string            `yaml:"clusterIP"`
		Selector  map[string]string `yaml:"selector"`
		Ports     []servicePort     `yaml:"ports"`
	} `yaml:"spec"`
}

type labelSelector struct {
	MatchLabels map[string]string `yaml:"matchLabels"`
}

type pvcSpec struct {
	AccessModes []string `yaml:"accessModes"`
	Resources   struct {
		Requests map[string]string `yaml:"requests"`
	} `yaml:"resources"`
}

type pvc struct {
	header `yaml:",inline"`
	Spec   pvcSpec `yaml:"spec"`
}

type envVar struct {
	Name      string `yaml:"name"`
	Value     string `yaml:"value"`
	ValueFrom *struct {
		FieldRef *struct {
			FieldPath string `yaml:"fieldPath"`
		} `yaml:"fieldRef"`
		SecretKeyRef *struct {
			Name string `yaml:"name"`
			Key  string `yaml:"key"`
		} `yaml:"secretKeyRef"`
	} `yaml:"valueFrom"`
}

type probeSpec struct {
	HTTPGet *struct {
		Path string `yaml:"path"`
		Port any    `yaml:"port"`
	} `yaml:"httpGet"`
	InitialDelaySeconds int `yaml:"initialDelaySeconds"`
	PeriodSeconds       int `yaml:"periodSeconds"`
	FailureThreshold    int `yaml:"failureThreshold"`
}

type container struct {
	Name    string   `yaml:"name"`
	Image   string   `yaml:"image"`
	Command []string `yaml:"command"`
	Args    []string `yaml:"args"`
	Env     []envVar `yaml:"env"`
	EnvFrom []struct {
		SecretRef *struct {
			Name string `yaml:"name"`
		} `yaml:"secretRef"`
	} `yaml:"envFrom"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	ReadinessProbe *probeSpec `yaml:"readinessProbe"`
	LivenessProbe  *probeSpec `yaml:"livenessProbe"`
	Resources      struct {
		Requests map[string]string `yaml:"requests"`
		Limits   map[string]string `yaml:"limits"`
	} `yaml:"resources"`
	SecurityContext struct {
		AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
		ReadOnlyRootFilesystem   bool  `yaml:"readOnlyRootFilesystem"`
		Capabilities             struct {
			Drop []string `yaml:"drop"`
		} `yaml:"capabilities"`
	} `yaml:"securityContext"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
		ReadOnly  bool   `yaml:"readOnly"`
	} `yaml:"volumeMounts"`
}

type podTemplate struct {
	Metadata meta `yaml:"metadata"`
	Spec     struct {
		TerminationGracePeriodSeconds *int   `yaml:"terminationGracePeriodSeconds"`
		RestartPolicy                 string `yaml:"restartPolicy"`
		SecurityContext               struct {
			RunAsNonRoot   bool `yaml:"runAsNonRoot"`
			RunAsUser      int  `yaml:"runAsUser"`
			RunAsGroup     int  `yaml:"runAsGroup"`
			FSGroup        int  `yaml:"fsGroup"`
			SeccompProfile struct {
				Type string `yaml:"type"`
			} `yaml:"seccompProfile"`
		} `yaml:"securityContext"`
		Containers []container `yaml:"containers"`
		Volumes    []struct {
			Name      string `yaml:"name"`
			ConfigMap *struct {
				Name string `yaml:"name"`
			} `yaml:"configMap"`
			PersistentVolumeClaim *struct {
				ClaimName string `yaml:"claimName"`
			} `yaml:"persistentVolumeClaim"`
		} `yaml:"volumes"`
	} `yaml:"spec"`
}

type statefulSet struct {
	header `yaml:",inline"`
	Spec   struct {
		ServiceName          string        `yaml:"serviceName"`
		Replicas             int           `yaml:"replicas"`
		PodManagementPolicy  string        `yaml:"podManagementPolicy"`
		Selector             labelSelector `yaml:"selector"`
		Template             podTemplate   `yaml:"template"`
		VolumeClaimTemplates []struct {
			Metadata meta    `yaml:"metadata"`
			Spec     pvcSpec `yaml:"spec"`
		} `yaml:"volumeClaimTemplates"`
	} `yaml:"spec"`
}

type cronJob struct {
	header `yaml:",inline"`
	Spec   struct {
		Schedule                   string `yaml:"schedule"`
		TimeZone                   string `yaml:"timeZone"`
		ConcurrencyPolicy          string `yaml:"concurrencyPolicy"`
		StartingDeadlineSeconds    int    `yaml:"startingDeadlineSeconds"`
		SuccessfulJobsHistoryLimit int    `yaml:"successfulJobsHistoryLimit"`
		FailedJobsHistoryLimit     int    `yaml:"failedJobsHistoryLimit"`
		JobTemplate                struct {
			Spec struct {
				BackoffLimit          int         `yaml:"backoffLimit"`
				ActiveDeadlineSeconds int         `yaml:"activeDeadlineSeconds"`
				Template              podTemplate `yaml:"template"`
			} `yaml:"spec"`
		} `yaml:"jobTemplate"`
	} `yaml:"spec"`
}

type serviceMonitor struct {
	header `yaml:",inline"`
	Spec   struct {
		Selector  labelSelector `yaml:"selector"`
		Endpoints []struct {
			Port     string `yaml:"port"`
			Path     string `yaml:"path"`
			Interval string `yaml:"interval"`
		} `yaml:"endpoints"`
	} `yaml:"spec"`
}

type kustomization struct {
	APIVersion string   `yaml:"apiVersion"`
	Kind       string   `yaml:"kind"`
	Resources  []string `yaml:"resources"`
	Images     []struct {
		Name    string `yaml:"name"`
		NewName string `yaml:"newName"`
		NewTag  string `yaml:"newTag"`
	} `yaml:"images"`
}

// manifests is every object under deploy/kubernetes, by kind.
type manifests struct {
	files        []string
	kust         kustomization
	configMaps   map[string]configMap
	secrets      map[string]secret
	services     map[string]service
	pvcs         map[string]pvc
	statefulSets map[string]statefulSet
	cronJobs     map[string]cronJob
	monitors     map[string]serviceMonitor
}

// strict decodes node into v, rejecting keys v does not have.
func strict(node *yaml.Node, v any) error {
	data, err := yaml.Marshal(node)
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	return dec.Decode(v)
}

func put[T any](t *testing.T, where string, m map[string]T, node *yaml.Node, name func(T) string) {
	t.Helper()
	var v T
	if err := strict(node, &v); err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	n := name(v)
	if _, dup := m[n]; dup || n == "" {
		t.Fatalf("%s: name %q is empty or given twice", where, n)
	}
	m[n] = v
}

func loadManifests(t *testing.T) *manifests {
	t.Helper()
	ms := &manifests{
		configMaps: map[string]configMap{}, secrets: map[string]secret{}, services: map[string]service{},
		pvcs: map[string]pvc{}, statefulSets: map[string]statefulSet{}, cronJobs: map[string]cronJob{},
		monitors: map[string]serviceMonitor{},
	}
	files, err := filepath.Glob(filepath.Join("kubernetes", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests under deploy/kubernetes: %v", err)
	}
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(f)
		for i := 0; ; i++ {
			var node yaml.Node
			err := dec.Decode(&node)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: document %d: %v", path, i, err)
			}
			var h header
			if err := node.Decode(&h); err != nil {
				t.Fatalf("%s: document %d: %v", path, i, err)
			}
			where := fmt.Sprintf("%s: %s %s", path, h.Kind, h.Metadata.Name)
			name := func(x header) string { return x.Metadata.Name }
			switch h.Kind {
			case "Kustomization":
				if err := strict(&node, &ms.kust); err != nil {
					t.Fatalf("%s: %v", where, err)
				}
				continue
			case "ConfigMap":
				put(t, where, ms.configMaps, &node, func(v configMap) string { return name(v.header) })
			case "Secret":
				put(t, where, ms.secrets, &node, func(v secret) string { return name(v.header) })
			case "Service":
				put(t, where, ms.services, &node, func(v service) string { return name(v.header) })
			case "PersistentVolumeClaim":
				put(t, where, ms.pvcs, &node, func(v pvc) string { return name(v.header) })
			case "StatefulSet":
				put(t, where, ms.statefulSets, &node, func(v statefulSet) string { return name(v.header) })
			case "CronJob":
				put(t, where, ms.cronJobs, &node, func(v cronJob) string { return name(v.header) })
			case "ServiceMonitor":
				put(t, where, ms.monitors, &node, func(v serviceMonitor) string { return name(v.header) })
			default:
				t.Fatalf("%s: kind %q: add it to this test", where, h.Kind)
			}
		}
		f.Close()
		ms.files = append(ms.files, filepath.Base(path))
	}
	return ms
}

func TestKubernetesKustomization(t *testing.T) {
	ms := loadManifests(t)
	var want []string
	for _, f := range ms.files {
		if f != "kustomization.yaml" {
			want = append(want, f)
		}
	}
	got := slices.Clone(ms.kust.Resources)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("kustomization.yaml lists %v, the folder has %v", got, want)
	}
	if kubectl, err := exec.LookPath("kubectl"); err == nil {
		if out, err := exec.Command(kubectl, "kustomize", "kubernetes").CombinedOutput(); err != nil {
			t.Errorf("kubectl kustomize: %v\n%s", err, out)
		}
	} else {
		t.Log("kubectl not installed: kustomize rendering not checked")
	}
}

// pod is one pod template of the manifests and what runs it.
type pod struct {
	where    string
	tmpl     podTemplate
	replicas int               // StatefulSet replicas; 0 for a job
	claims   map[string]string // volumeClaimTemplates: name → ""
	cronJob  *cronJob
}

func (ms *manifests) pods() []pod {
	var out []pod
	for _, name := range sortedKeys(ms.statefulSets) {
		s := ms.statefulSets[name]
		p := pod{where: "StatefulSet " + name, tmpl: s.Spec.Template, replicas: s.Spec.Replicas, claims: map[string]string{}}
		for _, c := range s.Spec.VolumeClaimTemplates {
			p.claims[c.Metadata.Name] = ""
		}
		out = append(out, p)
	}
	for _, name := range sortedKeys(ms.cronJobs) {
		c := ms.cronJobs[name]
		out = append(out, pod{where: "CronJob " + name, tmpl: c.Spec.JobTemplate.Spec.Template, cronJob: &c})
	}
	return out
}

// varRef is a $(VAR) reference in a container's args.
var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

const podIndexField = "metadata.labels['apps.kubernetes.io/pod-index']"

// TestKubernetesPods checks each container that runs a lanewatch command:
// real flags, the shard count against replicas, the config it mounts, the
// variables that config names, where it writes, probes and resources.
func TestKubernetesPods(t *testing.T) {
	ms := loadManifests(t)
	built := dockerBinaries(t)
	images := map[string]bool{}
	for _, im := range ms.kust.Images {
		images[im.Name] = true
	}
	ran := map[string]int{}
	for _, p := range ms.pods() {
		for _, c := range p.tmpl.Spec.Containers {
			where := p.where + " container " + c.Name
			t.Run(strings.ReplaceAll(where, " ", "_"), func(t *testing.T) {
				checkContainer(t, ms, p, c, where, built, images, ran)
			})
		}
	}
	for _, cmd := range []string{"sampler", "policygen"} {
		if ran[cmd] == 0 {
			t.Errorf("no pod runs %s", cmd)
		}
	}
}

func checkContainer(t *testing.T, ms *manifests, p pod, c container, where string, built, images map[string]bool, ran map[string]int) {
	if len(c.Command) == 0 {
		t.Fatalf("%s: no command: name the binary, so that a test can check its flags", where)
	}
	if !built[c.Command[0]] {
		t.Errorf("%s: runs %s, which the Dockerfile does not build (it builds %v)", where, c.Command[0], sortedKeys(built))
	}
	if !images[c.Image] {
		t.Errorf("%s: image %q is not one kustomization.yaml sets", where, c.Image)
	}
	env := map[string]envVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	// $(VAR) in args is expanded by Kubernetes from the container's env only.
	args := slices.Clone(c.Args)
	for i, a := range args {
		args[i] = varRef.ReplaceAllStringFunc(a, func(ref string) string {
			v := varRef.FindStringSubmatch(ref)[1]
			if _, ok := env[v]; !ok {
				t.Errorf("%s: args use $(%s), which the container's env does not define", where, v)
			}
			if v == "POD_INDEX" {
				return "0"
			}
			return env[v].Value
		})
	}
	inv := parseInvocation(t, where, c.Command[0], append(slices.Clone(c.Command[1:]), args...))
	checkValues(t, inv)
	ran[inv.cmd]++

	// The shard: -shard $(POD_INDEX)/N, N the replicas, POD_INDEX the pod-index label.
	if inv.cmd == "sampler" {
		i := slices.Index(c.Args, "-shard")
		switch {
		case p.replicas == 0:
			t.Errorf("%s: a sampler runs in a StatefulSet, whose pod index is its shard", where)
		case i < 0 || i+1 >= len(c.Args):
			t.Errorf("%s: no -shard; with %d replicas every pod would probe every lane", where, p.replicas)
		default:
			idx, n, _ := strings.Cut(c.Args[i+1], "/")
			if idx != "$(POD_INDEX)" {
				t.Errorf("%s: -shard %s: want $(POD_INDEX)/%d", where, c.Args[i+1], p.replicas)
			}
			if count, err := strconv.Atoi(n); err != nil || count != p.replicas {
				t.Errorf("%s: -shard %s: the shard count must equal replicas (%d)", where, c.Args[i+1], p.replicas)
			}
			for k := range p.replicas {
				sh, err := config.ParseShard(strconv.Itoa(k) + "/" + n)
				if err != nil || sh.Index != k {
					t.Errorf("%s: pod %d: -shard %d/%s: %v", where, k, k, n, err)
				}
			}
			if e, ok := env["POD_INDEX"]; !ok || e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != podIndexField {
				t.Errorf("%s: POD_INDEX must come from the downward API, fieldPath %s", where, podIndexField)
			}
		}
	}

	// The config: -config names a key of the ConfigMap mounted at its folder.
	mounts := map[string]string{} // mountPath → volume name
	readOnly := map[string]bool{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = m.Name
		readOnly[m.MountPath] = m.ReadOnly
	}
	cfgPath := inv.flags["config"]
	vol, ok := mounts[filepath.Dir(cfgPath)]
	if !ok {
		t.Fatalf("%s: -config %s: nothing is mounted at %s (mounts: %v)", where, cfgPath, filepath.Dir(cfgPath), sortedKeys(mounts))
	}
	cmName := ""
	for _, v := range p.tmpl.Spec.Volumes {
		if v.Name == vol && v.ConfigMap != nil {
			cmName = v.ConfigMap.Name
		}
	}
	cm, ok := ms.configMaps[cmName]
	if !ok {
		t.Fatalf("%s: -config %s: volume %q is not a ConfigMap of the manifests", where, cfgPath, vol)
	}
	text, ok := cm.Data[filepath.Base(cfgPath)]
	if !ok {
		t.Fatalf("%s: -config %s: ConfigMap %s has no key %s", where, cfgPath, cmName, filepath.Base(cfgPath))
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, filepath.Base(cfgPath)), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(filepath.Join(dir, filepath.Base(cfgPath)))
	if err != nil {
		t.Fatalf("%s: ConfigMap %s, key %s does not load: %v", where, cmName, filepath.Base(cfgPath), err)
	}
	if cfg.Store.Kind != config.StoreInflux {
		t.Errorf("%s: store.kind %s: pods on several nodes share one store only with influx", where, cfg.Store.Kind)
	}

	// Every variable the config names comes from the env or a Secret.
	for _, v := range envNeeded(inv.cmd, cfg) {
		if e, ok := env[v]; ok {
			if e.Value == "" && (e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil) {
				t.Errorf("%s: $%s is neither a value nor a secretKeyRef", where, v)
			}
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && !ms.secretHas(e.ValueFrom.SecretKeyRef.Name, e.ValueFrom.SecretKeyRef.Key) {
				t.Errorf("%s: $%s comes from key %s of Secret %s, which does not have it", where, v, e.ValueFrom.SecretKeyRef.Key, e.ValueFrom.SecretKeyRef.Name)
			}
			continue
		}
		found := false
		for _, ef := range c.EnvFrom {
			if ef.SecretRef != nil && ms.secretHas(ef.SecretRef.Name, v) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: the config reads $%s, which neither env nor an envFrom Secret provides", where, v)
		}
	}

	// It writes only on writable volumes: the root filesystem is read-only.
	if !c.SecurityContext.ReadOnlyRootFilesystem || c.SecurityContext.AllowPrivilegeEscalation == nil || *c.SecurityContext.AllowPrivilegeEscalation {
		t.Errorf("%s: want readOnlyRootFilesystem: true and allowPrivilegeEscalation: false", where)
	}
	if !p.tmpl.Spec.SecurityContext.RunAsNonRoot || p.tmpl.Spec.SecurityContext.FSGroup == 0 {
		t.Errorf("%s: want runAsNonRoot and an fsGroup that may write the volumes", where)
	}
	for key, d := range writes(inv.cmd, cfg) {
		ok := false
		for mp, vol := range mounts {
			if underAny(d, []string{mp}) && !readOnly[mp] && ms.writableVolume(p, vol) {
				ok = true
			}
		}
		if !ok {
			t.Errorf("%s: %s is in %s, which is on no writable volume (mounts: %v)", where, key, d, mounts)
		}
	}

	if c.Resources.Requests["cpu"] == "" || c.Resources.Requests["memory"] == "" || c.Resources.Limits["memory"] == "" {
		t.Errorf("%s: want cpu and memory requests and a memory limit", where)
	}

	switch inv.cmd {
	case "sampler":
		checkSamplerPod(t, ms, p, c, inv, cfg, where)
	case "policygen":
		checkPolicygenJob(t, p, inv, cfg, where)
	}
}

func (ms *manifests) secretHas(name, key string) bool {
	s, ok := ms.secrets[name]
	if !ok {
		return false
	}
	_, a := s.StringData[key]
	_, b := s.Data[key]
	return a || b
}

// writableVolume reports whether the pod's volume vol is storage a process
// may write: a claim template of the StatefulSet or a PVC of the manifests.
func (ms *manifests) writableVolume(p pod, vol string) bool {
	if _, ok := p.claims[vol]; ok {
		return true
	}
	for _, v := range p.tmpl.Spec.Volumes {
		if v.Name == vol && v.PersistentVolumeClaim != nil {
			_, ok := ms.pvcs[v.PersistentVolumeClaim.ClaimName]
			return ok
		}
	}
	return false
}

func checkSamplerPod(t *testing.T, ms *manifests, p pod, c container, inv invocation, cfg *config.Config, where string) {
	t.Helper()
	// The metrics port: -listen, the container port named metrics, the
	// Service that selects the pods and the ServiceMonitor that selects it.
	_, port, _ := strings.Cut(inv.flags["listen"], ":")
	metricsPort := 0
	for _, cp := range c.Ports {
		if cp.Name == "metrics" {
			metricsPort = cp.ContainerPort
		}
	}
	if metricsPort == 0 || strconv.Itoa(metricsPort) != port {
		t.Errorf("%s: -listen %s, but the container port named metrics is %d", where, inv.flags["listen"], metricsPort)
	}
	if inv.flags["listen"] != ":"+port && !strings.HasPrefix(inv.flags["listen"], "0.0.0.0:") {
		t.Errorf("%s: -listen %s: bind every address, or Prometheus and the kubelet cannot reach it", where, inv.flags["listen"])
	}
	for name, pr := range map[string]*probeSpec{"readinessProbe": c.ReadinessProbe, "livenessProbe": c.LivenessProbe} {
		if pr == nil || pr.HTTPGet == nil || fmt.Sprint(pr.HTTPGet.Port) != "metrics" {
			t.Errorf("%s: want an httpGet %s on port metrics", where, name)
		}
	}
	if c.ReadinessProbe != nil && c.ReadinessProbe.HTTPGet != nil && c.ReadinessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("%s: readiness on %s, want /healthz (the last round was stored)", where, c.ReadinessProbe.HTTPGet.Path)
	}
	// /healthz is 503 while the last round could not be stored: a restart
	// does not mend the store, so liveness asks only whether the process
	// answers.
	if c.LivenessProbe != nil && c.LivenessProbe.HTTPGet != nil && c.LivenessProbe.HTTPGet.Path != "/metrics" {
		t.Errorf("%s: liveness on %s, want /metrics: /healthz fails when the store does, which a restart does not mend", where, c.LivenessProbe.HTTPGet.Path)
	}
	grace := p.tmpl.Spec.TerminationGracePeriodSeconds
	if need := longestTimeout(cfg) + time.Minute; grace == nil || time.Duration(*grace)*time.Second < need {
		t.Errorf("%s: terminationGracePeriodSeconds must let the round in flight be stored: at least %v", where, need)
	}

	var svc *service
	for _, name := range sortedKeys(ms.services) {
		s := ms.services[name]
		if len(s.Spec.Selector) > 0 && subset(s.Spec.Selector, p.tmpl.Metadata.Labels) {
			svc = &s
		}
	}
	if svc == nil {
		t.Fatalf("%s: no Service selects the pods (labels %v)", where, p.tmpl.Metadata.Labels)
	}
	for _, s := range ms.statefulSets {
		if s.Spec.ServiceName != svc.Metadata.Name || !subset(s.Spec.Selector.MatchLabels, p.tmpl.Metadata.Labels) {
			t.Errorf("StatefulSet %s: serviceName %q and selector %v must name Service %s and match the pods", s.Metadata.Name, s.Spec.ServiceName, s.Spec.Selector.MatchLabels, svc.Metadata.Name)
		}
	}
	if svc.Spec.ClusterIP != "None" {
		t.Errorf("Service %s: want clusterIP: None, the headless service of the StatefulSet", svc.Metadata.Name)
	}
	named := false
	for _, sp := range svc.Spec.Ports {
		if sp.Name == "metrics" && (fmt.Sprint(sp.TargetPort) == "metrics" || fmt.Sprint(sp.TargetPort) == port) {
			named = true
		}
	}
	if !named {
		t.Errorf("Service %s: want a port named metrics to the container's metrics port", svc.Metadata.Name)
	}
	monitored := false
	for _, m := range ms.monitors {
		if m.APIVersion != "monitoring.coreos.com/v1" || len(m.Spec.Selector.MatchLabels) == 0 || !subset(m.Spec.Selector.MatchLabels, svc.Metadata.Labels) {
			continue
		}
		for _, e := range m.Spec.Endpoints {
			if e.Port == "metrics" && (e.Path == "" || e.Path == "/metrics") {
				monitored = true
			}
		}
	}
	if !monitored {
		t.Errorf("Service %s: no ServiceMonitor selects it by its labels %v and scrapes port metrics", svc.Metadata.Name, svc.Metadata.Labels)
	}
}

func checkPolicygenJob(t *testing.T, p pod, inv invocation, cfg *config.Config, where string) {
	t.Helper()
	cj := p.cronJob
	if cj == nil {
		t.Fatalf("%s: policygen runs in a CronJob", where)
	}
	if _, err := cron.ParseStandard(cj.Spec.Schedule); err != nil {
		t.Fatalf("%s: schedule %q: %v", where, cj.Spec.Schedule, err)
	}
	if cj.Spec.ConcurrencyPolicy != "Forbid" {
		t.Errorf("%s: want concurrencyPolicy: Forbid", where)
	}
	if p.tmpl.Spec.RestartPolicy != "Never" && p.tmpl.Spec.RestartPolicy != "OnFailure" {
		t.Errorf("%s: a job's restartPolicy is Never or OnFailure, not %q", where, p.tmpl.Spec.RestartPolicy)
	}
	f := strings.Fields(cj.Spec.Schedule)
	if len(f) != 5 {
		t.Fatalf("%s: schedule %q: want 5 fields", where, cj.Spec.Schedule)
	}
	if day := inv.flags["day"]; day != "" {
		hh, mm := numbers(t, where, f[1]), numbers(t, where, f[0])
		if day != "tomorrow" || len(hh) != 1 || len(mm) != 1 {
			t.Fatalf("%s: want one run a day of -day tomorrow, got %q -day %s", where, cj.Spec.Schedule, day)
		}
		checkLateEvening(t, where, cfg, cj.Spec.TimeZone, hh[0], mm[0])
		return
	}
	if f[1] != "*" {
		t.Errorf("%s: want every hour, got %q", where, cj.Spec.Schedule)
	}
	checkAfterRounds(t, where, cfg, cj.Spec.TimeZone, numbers(t, where, f[0]))
}

func subset(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// dockerBinaries reads which paths the Dockerfile's image holds binaries
// at: the packages `go build -o /out/` builds, copied into one folder.
func dockerBinaries(t *testing.T) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("kubernetes", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	build := regexp.MustCompile(`(?m)^RUN .*go build .*-o (\S+)/ ((?:\./cmd/\S+ ?)+)$`).FindStringSubmatch(text)
	if build == nil {
		t.Fatal("Dockerfile: no `go build -o DIR/ ./cmd/...` line")
	}
	cp := regexp.MustCompile(`(?m)^COPY --from=\S+ ` + regexp.QuoteMeta(build[1]) + `/ (\S+)/$`).FindStringSubmatch(text)
	if cp == nil {
		t.Fatalf("Dockerfile: nothing copies %s/ into the image", build[1])
	}
	out := map[string]bool{}
	for _, pkg := range strings.Fields(build[2]) {
		if _, err := os.Stat(filepath.Join(repoRoot, pkg)); err != nil {
			t.Errorf("Dockerfile builds %s, which is not in the repository", pkg)
		}
		out[cp[1]+"/"+filepath.Base(pkg)] = true
	}
	return out
}
