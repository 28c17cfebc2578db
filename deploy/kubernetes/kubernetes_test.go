package kubernetes_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warcproxy/warcproxy/deploy/deploytest"
	"github.com/warcproxy/warcproxy/internal/config"
	"gopkg.in/yaml.v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	psapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
)

// variants are the two fleets a user applies with kubectl apply -k, each
// with the workload that runs the proxy: one of them per namespace.
var variants = []struct{ dir, workload string }{
	{".", "StatefulSet/warcproxy"},
	{"stateless", "Deployment/warcproxy"},
}

// k8sFiles lists the manifests the kustomization in dir applies, following
// resources that are directories (../common), and checks that each
// kustomization names every manifest in its folder (one it leaves out is
// never applied, nor checked here).
func k8sFiles(t *testing.T, dir string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	require.NoError(t, err)
	var k struct {
		Resources []string `yaml:"resources"`
	}
	require.NoError(t, yaml.Unmarshal(data, &k))
	require.NotEmpty(t, k.Resources, "%s/kustomization.yaml resources", dir)
	var files, here []string
	for _, r := range k.Resources {
		p := filepath.Join(dir, r)
		fi, err := os.Stat(p)
		require.NoError(t, err, "%s/kustomization.yaml", dir)
		if fi.IsDir() {
			files = append(files, k8sFiles(t, p)...)
			continue
		}
		files = append(files, p)
		here = append(here, r)
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var inDir []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".yaml") && e.Name() != "kustomization.yaml" {
			inDir = append(inDir, e.Name())
		}
	}
	require.ElementsMatch(t, inDir, here, "manifests in %s vs its kustomization.yaml resources", dir)
	return files
}

// TestKustomizationsCoverEveryManifest: every manifest under this folder
// is applied by one of the variants, so none is left unchecked.
func TestKustomizationsCoverEveryManifest(t *testing.T) {
	applied := map[string]bool{}
	for _, v := range variants {
		for _, f := range k8sFiles(t, v.dir) {
			applied[filepath.Clean(f)] = true
		}
	}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") || d.Name() == "kustomization.yaml" {
			return err
		}
		require.True(t, applied[path], "%s: no kustomization applies it", path)
		return nil
	})
	require.NoError(t, err)
}

// k8sDocs returns every YAML document of the manifests the kustomization
// in dir applies, keyed "file#index".
func k8sDocs(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	docs := map[string][]byte{}
	for _, f := range k8sFiles(t, dir) {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		r := k8syaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for i := 0; ; i++ {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err, f)
			if len(bytes.TrimSpace(doc)) > 0 {
				docs[fmt.Sprintf("%s#%d", f, i)] = doc
			}
		}
	}
	return docs
}

// k8sObjects decodes every manifest of the kustomization in dir into
// maps, keyed "Kind/name"; a name used twice for one kind fails.
func k8sObjects(t *testing.T, dir string) map[string]map[string]any {
	t.Helper()
	objs := map[string]map[string]any{}
	for where, doc := range k8sDocs(t, dir) {
		var o map[string]any
		require.NoError(t, yaml.Unmarshal(doc, &o), where)
		if o == nil {
			continue
		}
		md := o["metadata"].(map[string]any)
		key := o["kind"].(string) + "/" + md["name"].(string)
		require.NotContains(t, objs, key, "%s: %s twice", where, key)
		objs[key] = o
	}
	return objs
}

// get walks a decoded YAML document: get(o, "spec", "template", 0, ...).
func get(t *testing.T, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			require.True(t, ok, "%v: not a map at %q", path, k)
			v = m[k]
		case int:
			l, ok := v.([]any)
			require.True(t, ok && k < len(l), "%v: no item %d", path, k)
			v = l[k]
		}
	}
	return v
}

// keys lists a map's keys, for a failure message.
func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// proxyPod is the warcproxy container of a workload, its pod spec, and
// its command line (the image's entrypoint and the container's args, with
// $(VAR) filled in from its env as the kubelet does) as the proxy's own
// flag parser reads it.
type proxyPod struct {
	workload, pod, container map[string]any
	cfg                      config.Config
	env                      map[string]any // name -> the env entry
}

func findProxyPod(t *testing.T, objs map[string]map[string]any, workload string) proxyPod {
	t.Helper()
	w := objs[workload]
	require.NotNil(t, w, "%s; have %v", workload, keys(objs))
	pp := proxyPod{workload: w, pod: get(t, w, "spec", "template", "spec").(map[string]any), env: map[string]any{}}
	for _, x := range pp.pod["containers"].([]any) {
		if x.(map[string]any)["name"] == "warcproxy" {
			pp.container = x.(map[string]any)
		}
	}
	require.NotNil(t, pp.container, "%s: no container warcproxy", workload)
	vars := map[string]string{}
	if env, ok := pp.container["env"].([]any); ok {
		for _, e := range env {
			em := e.(map[string]any)
			name := em["name"].(string)
			pp.env[name] = em
			vars[name] = envValue(t, objs, workload, em)
		}
	}
	var args []string
	for _, a := range pp.container["args"].([]any) {
		args = append(args, expandVars(t, workload, a.(string), vars))
	}
	pp.cfg = deploytest.ParseFlags(t, workload+" args", append(deploytest.Entrypoint(t, "../docker/Dockerfile"), args...))
	return pp
}

// envValue is the value an env entry gives its variable: its value, or
// the key of the ConfigMap or Secret it names, which must both exist.
func envValue(t *testing.T, objs map[string]map[string]any, where string, e map[string]any) string {
	t.Helper()
	if v, ok := e["value"].(string); ok {
		return v
	}
	from, ok := e["valueFrom"].(map[string]any)
	require.True(t, ok, "%s: env %v has neither value nor valueFrom", where, e["name"])
	for kind, ref := range map[string]string{"ConfigMap": "configMapKeyRef", "Secret": "secretKeyRef"} {
		r, ok := from[ref].(map[string]any)
		if !ok {
			continue
		}
		obj := objs[kind+"/"+r["name"].(string)]
		require.NotNil(t, obj, "%s: env %v: no %s %v", where, e["name"], kind, r["name"])
		field := "data"
		if kind == "Secret" {
			field = "stringData"
		}
		data, _ := obj[field].(map[string]any)
		require.Contains(t, data, r["key"], "%s: env %v: %s %v has no key %v", where, e["name"], kind, r["name"], r["key"])
		return fmt.Sprint(data[r["key"].(string)])
	}
	t.Fatalf("%s: env %v: valueFrom is neither a configMapKeyRef nor a secretKeyRef", where, e["name"])
	return ""
}

// varRef is the kubelet's $(NAME) in a container's args.
var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// expandVars fills in $(NAME) from the container's env. The kubelet leaves
// an unknown reference as it is, which the proxy would then take as a
// value: here that fails.
func expandVars(t *testing.T, where, arg string, vars map[string]string) string {
	t.Helper()
	return varRef.ReplaceAllStringFunc(arg, func(ref string) string {
		name := varRef.FindStringSubmatch(ref)[1]
		v, ok := vars[name]
		require.True(t, ok, "%s: args use %s, which the container's env does not set", where, ref)
		return v
	})
}

// checkProxyPod: the command line parses and points at the Redis Service;
// probes and scrape annotations use the metrics port the flags choose; the
// grace period outlasts the preStop sleep and the shutdown budget; every
// Secret and volume referenced exists and is mounted where the flags look;
// the Services select the pods and name ports the container has.
func checkProxyPod(t *testing.T, objs map[string]map[string]any, pp proxyPod) {
	t.Helper()
	cfg, c := pp.cfg, pp.container
	require.Equal(t, "redis://redis:6379/0", cfg.DedupDB)
	require.Equal(t, "redis://redis:6379/0", cfg.StatsDB)
	require.NotEmpty(t, cfg.ProxyAuthFile)
	require.NotNil(t, objs["Service/redis"])
	require.Equal(t, 6379, get(t, objs["Service/redis"], "spec", "ports", 0, "port"))
	require.NotNil(t, objs["Deployment/redis"])
	require.GreaterOrEqual(t, get(t, pp.workload, "spec", "replicas"), 2, "a fleet")

	ports := map[string]int{}
	for _, p := range c["ports"].([]any) {
		pm := p.(map[string]any)
		ports[pm["name"].(string)] = pm["containerPort"].(int)
	}
	require.Equal(t, cfg.Port, ports["proxy"])
	require.Equal(t, deploytest.Port(t, cfg.MetricsAddress), ports["metrics"])
	ann := get(t, pp.workload, "spec", "template", "metadata", "annotations").(map[string]any)
	require.Equal(t, "true", ann["prometheus.io/scrape"])
	require.Equal(t, strconv.Itoa(ports["metrics"]), ann["prometheus.io/port"])
	require.Equal(t, "/metrics", ann["prometheus.io/path"])
	for _, probe := range []string{"livenessProbe", "readinessProbe", "startupProbe"} {
		require.Equal(t, "/status", get(t, c, probe, "httpGet", "path"), probe)
		require.Equal(t, "metrics", get(t, c, probe, "httpGet", "port"), probe)
	}
	// The preStop sleep runs before SIGTERM, inside the grace period.
	require.Greater(t, pp.grace(t), cfg.ShutdownTimeout+pp.preStop(t)+10*time.Second, "terminationGracePeriodSeconds")

	// Volumes: mounted where the flags look, backed by something.
	mounts := map[string]string{}
	for _, m := range c["volumeMounts"].([]any) {
		mm := m.(map[string]any)
		mounts[mm["name"].(string)] = mm["mountPath"].(string)
	}
	require.Equal(t, cfg.Dir, mounts["warcs"])
	require.True(t, strings.HasPrefix(cfg.ProxyAuthFile, mounts["proxy-auth"]+"/"), "proxy auth file %s under %s", cfg.ProxyAuthFile, mounts["proxy-auth"])
	require.True(t, strings.HasPrefix(cfg.CACert, mounts["ca"]+"/"))
	vols := pp.volumes()
	for name := range mounts {
		require.Contains(t, vols, name, "volumeMount %s: no such volume", name)
	}
	auth := vols["proxy-auth"]["secret"].(map[string]any)
	require.Equal(t, "/run/secrets/"+get(t, auth, "items", 0, "path").(string), cfg.ProxyAuthFile)
	secret := objs["Secret/"+auth["secretName"].(string)]
	require.NotNil(t, secret, "Secret %s", auth["secretName"])
	require.Contains(t, get(t, secret, "stringData"), get(t, auth, "items", 0, "key"))

	// The Services select the pods and name ports the container has.
	for _, name := range []string{"Service/warcproxy", "Service/warcproxy-headless"} {
		svc := objs[name]
		require.NotNil(t, svc, name)
		require.Equal(t, "warcproxy", get(t, svc, "spec", "selector", "app.kubernetes.io/name"), name)
		for _, p := range get(t, svc, "spec", "ports").([]any) {
			require.Contains(t, ports, p.(map[string]any)["targetPort"], name)
		}
	}
	// One fleet: no other workload runs the proxy's pods.
	self := get(t, pp.workload, "kind").(string) + "/warcproxy"
	for name := range objs {
		if kind, _, _ := strings.Cut(name, "/"); (kind == "StatefulSet" || kind == "Deployment") && name != "Deployment/redis" {
			require.Equal(t, self, name, "a second workload beside %s", self)
		}
	}
}

func (pp proxyPod) grace(t *testing.T) time.Duration {
	t.Helper()
	g, ok := pp.pod["terminationGracePeriodSeconds"].(int)
	require.True(t, ok, "terminationGracePeriodSeconds")
	return time.Duration(g) * time.Second
}

// preStop is the container's preStop sleep, 0 without one.
func (pp proxyPod) preStop(t *testing.T) time.Duration {
	t.Helper()
	lc, ok := pp.container["lifecycle"].(map[string]any)
	if !ok {
		return 0
	}
	ps, ok := lc["preStop"].(map[string]any)
	if !ok {
		return 0
	}
	require.Nil(t, ps["exec"], "preStop exec: the image has no shell nor sleep binary; use preStop.sleep")
	if sl, ok := ps["sleep"].(map[string]any); ok {
		return time.Duration(sl["seconds"].(int)) * time.Second
	}
	return 0
}

// volumes are the pod's volumes by name, a StatefulSet's claim templates
// included (as {"volumeClaimTemplate": template}).
func (pp proxyPod) volumes() map[string]map[string]any {
	vols := map[string]map[string]any{}
	for _, v := range pp.pod["volumes"].([]any) {
		vols[v.(map[string]any)["name"].(string)] = v.(map[string]any)
	}
	spec := pp.workload["spec"].(map[string]any)
	if tmpls, ok := spec["volumeClaimTemplates"].([]any); ok {
		for _, c := range tmpls {
			name := c.(map[string]any)["metadata"].(map[string]any)["name"].(string)
			vols[name] = map[string]any{"volumeClaimTemplate": c}
		}
	}
	return vols
}

// TestKubernetes: the StatefulSet (deploy/kubernetes) as checkProxyPod
// says, its WARC files on a claim of its own per replica, kept.
func TestKubernetes(t *testing.T) {
	objs := k8sObjects(t, ".")
	pp := findProxyPod(t, objs, "StatefulSet/warcproxy")
	checkProxyPod(t, objs, pp)
	require.Empty(t, pp.cfg.UploadTo, "the StatefulSet keeps its WARC files")
	require.Contains(t, pp.volumes()["warcs"], "volumeClaimTemplate", "the warcs volume is a claim per replica")
	require.Equal(t, "warcproxy-headless", get(t, pp.workload, "spec", "serviceName"))
}

// uploadRate is the conservative rate at which a pod ships to its store,
// for the grace period's arithmetic (stateless/warcproxy.yaml).
const uploadRate = 20e6 // bytes/s

// TestKubernetesStateless: the Deployment (deploy/kubernetes/stateless) as
// checkProxyPod says; it records into an emptyDir and ships to the bucket
// of its ConfigMap with the credentials of its Secret; what can be open at
// SIGTERM ships at a conservative 20 MB/s within half the shutdown budget
// (the other half is for exchanges in flight), and the grace period
// covers the budget; an idle file closes, and ships, within minutes.
func TestKubernetesStateless(t *testing.T) {
	objs := k8sObjects(t, "stateless")
	pp := findProxyPod(t, objs, "Deployment/warcproxy")
	checkProxyPod(t, objs, pp)
	cfg := pp.cfg

	cm := objs["ConfigMap/warcproxy-upload"]
	require.NotNil(t, cm)
	require.Equal(t, get(t, cm, "data", "upload-to"), cfg.UploadTo)
	require.Equal(t, get(t, cm, "data", "upload-endpoint"), cfg.UploadEndpoint)
	require.True(t, strings.HasPrefix(cfg.UploadTo, "s3://"), cfg.UploadTo)
	for _, name := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} {
		e, ok := pp.env[name].(map[string]any)
		require.True(t, ok, "env %s", name)
		require.NotNil(t, get(t, e, "valueFrom", "secretKeyRef"), "env %s comes from a Secret", name)
	}
	require.Contains(t, pp.env, "AWS_REGION")

	vols := pp.volumes()
	require.NotNil(t, get(t, vols["warcs"], "emptyDir", "sizeLimit"), "the warcs emptyDir has a sizeLimit")
	require.NotContains(t, pp.workload["spec"], "volumeClaimTemplates")

	open := time.Duration(float64(int64(cfg.MaxOpenWARCs)*cfg.RolloverSize) / uploadRate * float64(time.Second))
	require.Positive(t, cfg.MaxOpenWARCs, "--max-open-warcs bounds what is open, and so unshipped")
	require.LessOrEqual(t, open, cfg.ShutdownTimeout/2,
		"%d open WARCs of %d bytes take %v to ship at 20 MB/s: more than half of --shutdown-timeout %v",
		cfg.MaxOpenWARCs, cfg.RolloverSize, open, cfg.ShutdownTimeout)
	require.Greater(t, pp.grace(t), cfg.ShutdownTimeout+pp.preStop(t)+10*time.Second)
	require.Positive(t, cfg.RolloverIdleTime, "an idle pod's files close and ship")
	require.LessOrEqual(t, cfg.RolloverIdleTime, 15*time.Minute)
}

// k8sTyped decodes every manifest of the kustomization in dir strictly into its k8s.io/api type, as
// the API server's strict field validation (kubectl apply
// --validate=strict) does: an unknown or duplicate field, a wrong type, or
// a kind/apiVersion the scheme does not serve (such as a removed beta
// API) is an error. Keyed "Kind/name".
func k8sTyped(t *testing.T, dir string) map[string]runtime.Object {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, networkingv1.AddToScheme} {
		require.NoError(t, add(scheme))
	}
	dec := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
	objs := map[string]runtime.Object{}
	for where, doc := range k8sDocs(t, dir) {
		obj, gvk, err := dec.Decode(doc, nil, nil)
		require.NoError(t, err, where)
		m, err := meta.Accessor(obj)
		require.NoError(t, err, where)
		objs[gvk.Kind+"/"+m.GetName()] = obj
	}
	return objs
}

// TestKubernetesAPI checks what the API server (or the kubelet, later)
// would reject: strict decoding, object names, labels and annotations,
// selectors that select their own pods, port names, named ports that
// exist, the PodSecurity "restricted" level, and nothing executed inside
// the warcproxy image, which has no shell (deploy/docker/Dockerfile).
func TestKubernetesAPI(t *testing.T) {
	for _, v := range variants {
		t.Run(v.dir, func(t *testing.T) { checkAPI(t, k8sTyped(t, v.dir)) })
	}
}

func checkAPI(t *testing.T, objs map[string]runtime.Object) {
	pods := map[string]*corev1.PodTemplateSpec{} // workload templates by "Kind/name"
	for name, o := range objs {
		switch w := o.(type) {
		case *appsv1.StatefulSet:
			pods[name] = &w.Spec.Template
		case *appsv1.Deployment:
			pods[name] = &w.Spec.Template
		}
	}
	// selected returns the templates a selector matches.
	selected := func(t *testing.T, sel labels.Selector) []*corev1.PodTemplateSpec {
		var out []*corev1.PodTemplateSpec
		for _, p := range pods {
			if sel.Matches(labels.Set(p.Labels)) {
				out = append(out, p)
			}
		}
		return out
	}
	restricted, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	require.NoError(t, err)

	for name, o := range objs {
		t.Run(name, func(t *testing.T) {
			om := o.(metav1.ObjectMetaAccessor).GetObjectMeta().(*metav1.ObjectMeta)
			nameFn := apivalidation.NameIsDNSSubdomain
			if _, ok := o.(*corev1.Service); ok {
				nameFn = apivalidation.NameIsDNS1035Label
			}
			require.Empty(t, apivalidation.ValidateObjectMeta(om, false, nameFn, field.NewPath("metadata")))

			switch o := o.(type) {
			case *appsv1.StatefulSet:
				checkWorkload(t, restricted, o.Spec.Selector, &o.Spec.Template)
				for _, pvc := range o.Spec.VolumeClaimTemplates {
					require.NotEmpty(t, pvc.Spec.AccessModes, pvc.Name)
				}
			case *appsv1.Deployment:
				checkWorkload(t, restricted, o.Spec.Selector, &o.Spec.Template)
			case *corev1.Service:
				require.NotEmpty(t, o.Spec.Selector)
				backends := selected(t, labels.SelectorFromSet(o.Spec.Selector))
				require.NotEmpty(t, backends, "Service selects no workload's pods")
				for _, sp := range o.Spec.Ports {
					require.Empty(t, validation.IsValidPortName(sp.Name), "Service port name %q", sp.Name)
					if sp.TargetPort.Type == intstr.String {
						for _, p := range backends {
							require.True(t, hasPort(p.Spec.Containers, sp.TargetPort.StrVal, 0), "targetPort %q: no container port of that name", sp.TargetPort.StrVal)
						}
					}
				}
			case *networkingv1.NetworkPolicy:
				sel, err := metav1.LabelSelectorAsSelector(&o.Spec.PodSelector)
				require.NoError(t, err)
				require.False(t, sel.Empty(), "an empty podSelector applies to every pod in the namespace")
				targets := selected(t, sel)
				require.NotEmpty(t, targets, "podSelector selects no workload's pods")
				for _, in := range o.Spec.Ingress {
					for _, from := range in.From {
						if from.PodSelector != nil {
							fs, err := metav1.LabelSelectorAsSelector(from.PodSelector)
							require.NoError(t, err)
							require.NotEmpty(t, selected(t, fs), "ingress from %v selects no workload's pods", from.PodSelector)
						}
					}
					for _, np := range in.Ports {
						require.NotNil(t, np.Port)
						for _, p := range targets {
							require.True(t, hasPort(p.Spec.Containers, np.Port.StrVal, np.Port.IntVal), "ingress port %s: the selected pods do not listen there", np.Port)
						}
					}
				}
			}
		})
	}
}

// checkWorkload: the selector is valid and selects the template's own
// pods (the API server refuses the object otherwise), the pod passes the
// PodSecurity "restricted" level, port names are valid and probes name
// ports their container has.
func checkWorkload(t *testing.T, restricted policy.Evaluator, selector *metav1.LabelSelector, tmpl *corev1.PodTemplateSpec) {
	t.Helper()
	require.NotNil(t, selector)
	require.Empty(t, metav1validation.ValidateLabelSelector(selector, metav1validation.LabelSelectorValidationOptions{}, field.NewPath("spec", "selector")))
	sel, err := metav1.LabelSelectorAsSelector(selector)
	require.NoError(t, err)
	require.False(t, sel.Empty())
	require.True(t, sel.Matches(labels.Set(tmpl.Labels)), "selector %s does not match template labels %v", sel, tmpl.Labels)
	require.Empty(t, metav1validation.ValidateLabels(tmpl.Labels, field.NewPath("spec", "template", "metadata", "labels")))
	require.Empty(t, apivalidation.ValidateAnnotations(tmpl.Annotations, field.NewPath("spec", "template", "metadata", "annotations")))

	res := policy.AggregateCheckResults(restricted.EvaluatePod(psapi.LevelVersion{Level: psapi.LevelRestricted, Version: psapi.LatestVersion()}, &tmpl.ObjectMeta, &tmpl.Spec))
	require.True(t, res.Allowed, "PodSecurity restricted: %s", res.ForbiddenDetail())

	for _, c := range append(slices.Clone(tmpl.Spec.InitContainers), tmpl.Spec.Containers...) {
		for _, p := range c.Ports {
			if p.Name != "" {
				require.Empty(t, validation.IsValidPortName(p.Name), "container %s port name %q", c.Name, p.Name)
			}
		}
		for probe, pr := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe, "startup": c.StartupProbe} {
			if pr != nil && pr.HTTPGet != nil && pr.HTTPGet.Port.Type == intstr.String {
				require.True(t, hasPort([]corev1.Container{c}, pr.HTTPGet.Port.StrVal, 0), "container %s %s probe: no port named %q", c.Name, probe, pr.HTTPGet.Port.StrVal)
			}
		}
		if c.Image != "warcproxy" {
			continue
		}
		// FROM scratch: the binary and nothing else.
		require.Empty(t, c.Command, "container %s: the warcproxy image runs its entrypoint only", c.Name)
		for _, pr := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
			require.True(t, pr == nil || pr.Exec == nil, "container %s: exec probe in an image without a shell", c.Name)
		}
		if c.Lifecycle != nil {
			for _, h := range []*corev1.LifecycleHandler{c.Lifecycle.PreStop, c.Lifecycle.PostStart} {
				require.True(t, h == nil || h.Exec == nil, "container %s: exec lifecycle hook in an image without a shell (preStop.sleep needs none)", c.Name)
			}
		}
	}
}

// hasPort reports whether one of the containers has a port with this name
// (or, for an empty name, this number).
func hasPort(cs []corev1.Container, name string, number int32) bool {
	for _, c := range cs {
		for _, p := range c.Ports {
			if (name != "" && p.Name == name) || (name == "" && p.ContainerPort == number) {
				return true
			}
		}
	}
	return false
}

// TestKustomizeBuild: kubectl's own kustomize renders each variant (a
// cycle between kustomizations, a file outside a kustomization's root, a
// missing resource fail here, as in kubectl apply -k) into the objects
// this test reads from the files, each labelled part-of warcproxy and
// with the warcproxy image replaced by the registry's. Skipped without
// kubectl.
func TestKustomizeBuild(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl not on PATH: the kustomize render is not checked")
	}
	for _, v := range variants {
		t.Run(v.dir, func(t *testing.T) {
			cmd := exec.Command(kubectl, "kustomize", v.dir)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			require.NoError(t, err, "kubectl kustomize %s: %s", v.dir, stderr.String())
			var rendered []string
			r := k8syaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(out)))
			for {
				doc, err := r.Read()
				if errors.Is(err, io.EOF) {
					break
				}
				require.NoError(t, err)
				var o struct {
					Kind     string `yaml:"kind"`
					Metadata struct {
						Name   string            `yaml:"name"`
						Labels map[string]string `yaml:"labels"`
					} `yaml:"metadata"`
				}
				require.NoError(t, yaml.Unmarshal(doc, &o))
				name := o.Kind + "/" + o.Metadata.Name
				rendered = append(rendered, name)
				require.Equal(t, "warcproxy", o.Metadata.Labels["app.kubernetes.io/part-of"], name)
			}
			require.ElementsMatch(t, keys(k8sObjects(t, v.dir)), rendered)
			require.NotContains(t, string(out), "image: warcproxy\n", "the warcproxy image is not replaced")
			require.Contains(t, string(out), "image: registry.example.org/warcproxy:latest")
		})
	}
}
