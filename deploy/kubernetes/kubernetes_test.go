package kubernetes_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/warcproxy/warcproxy/deploy/deploytest"
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

// k8sFiles lists the manifests kustomization.yaml names, and checks that
// it names every manifest in the folder (one it leaves out is never
// applied, nor checked here).
func k8sFiles(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("kustomization.yaml")
	require.NoError(t, err)
	var k struct {
		Resources []string `yaml:"resources"`
	}
	require.NoError(t, yaml.Unmarshal(data, &k))
	require.NotEmpty(t, k.Resources, "kustomization.yaml resources")
	entries, err := os.ReadDir(".")
	require.NoError(t, err)
	var inDir []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".yaml") && e.Name() != "kustomization.yaml" {
			inDir = append(inDir, e.Name())
		}
	}
	require.ElementsMatch(t, inDir, k.Resources, "manifests in deploy/kubernetes vs kustomization.yaml resources")
	return k.Resources
}

// k8sDocs returns every YAML document of the manifests kustomization.yaml
// lists, keyed "file#index".
func k8sDocs(t *testing.T) map[string][]byte {
	t.Helper()
	docs := map[string][]byte{}
	for _, f := range k8sFiles(t) {
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

// k8sObjects decodes every manifest into maps, keyed "Kind/name".
func k8sObjects(t *testing.T) map[string]map[string]any {
	t.Helper()
	objs := map[string]map[string]any{}
	for where, doc := range k8sDocs(t) {
		var o map[string]any
		require.NoError(t, yaml.Unmarshal(doc, &o), where)
		if o == nil {
			continue
		}
		md := o["metadata"].(map[string]any)
		objs[o["kind"].(string)+"/"+md["name"].(string)] = o
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

// TestKubernetes: the StatefulSet's command line (image entrypoint + args)
// parses and points at the Redis Service; probes and scrape annotations
// use the metrics port the flags choose; the grace period outlasts the
// drain; every Secret and volume referenced exists.
func TestKubernetes(t *testing.T) {
	objs := k8sObjects(t)
	sts := objs["StatefulSet/warcproxy"]
	require.NotNil(t, sts, "StatefulSet/warcproxy; have %v", keys(objs))
	pod := get(t, sts, "spec", "template", "spec").(map[string]any)
	var c map[string]any
	for _, x := range pod["containers"].([]any) {
		if x.(map[string]any)["name"] == "warcproxy" {
			c = x.(map[string]any)
		}
	}
	require.NotNil(t, c)
	var args []string
	for _, a := range c["args"].([]any) {
		args = append(args, a.(string))
	}
	cfg := deploytest.ParseFlags(t, "StatefulSet args", append(deploytest.Entrypoint(t, "../docker/Dockerfile"), args...))
	require.Equal(t, "redis://redis:6379/0", cfg.DedupDB)
	require.Equal(t, "redis://redis:6379/0", cfg.StatsDB)
	require.NotEmpty(t, cfg.ProxyAuthFile)
	require.NotNil(t, objs["Service/redis"])
	require.Equal(t, 6379, get(t, objs["Service/redis"], "spec", "ports", 0, "port"))
	require.NotNil(t, objs["Deployment/redis"])
	require.GreaterOrEqual(t, get(t, sts, "spec", "replicas"), 2, "a fleet")

	ports := map[string]int{}
	for _, p := range c["ports"].([]any) {
		pm := p.(map[string]any)
		ports[pm["name"].(string)] = pm["containerPort"].(int)
	}
	require.Equal(t, cfg.Port, ports["proxy"])
	require.Equal(t, deploytest.Port(t, cfg.MetricsAddress), ports["metrics"])
	ann := get(t, sts, "spec", "template", "metadata", "annotations").(map[string]any)
	require.Equal(t, "true", ann["prometheus.io/scrape"])
	require.Equal(t, strconv.Itoa(ports["metrics"]), ann["prometheus.io/port"])
	require.Equal(t, "/metrics", ann["prometheus.io/path"])
	for _, probe := range []string{"livenessProbe", "readinessProbe", "startupProbe"} {
		require.Equal(t, "/status", get(t, c, probe, "httpGet", "path"), probe)
		require.Equal(t, "metrics", get(t, c, probe, "httpGet", "port"), probe)
	}
	grace := time.Duration(pod["terminationGracePeriodSeconds"].(int)) * time.Second
	// The preStop sleep runs before SIGTERM, inside the grace period.
	preStop := 0
	if lc, ok := c["lifecycle"].(map[string]any); ok {
		if ps, ok := lc["preStop"].(map[string]any); ok {
			require.Nil(t, ps["exec"], "preStop exec: the image has no shell nor sleep binary; use preStop.sleep")
			if sl, ok := ps["sleep"].(map[string]any); ok {
				preStop = sl["seconds"].(int)
			}
		}
	}
	require.Greater(t, grace, cfg.ShutdownTimeout+time.Duration(preStop)*time.Second+10*time.Second, "terminationGracePeriodSeconds")

	// Volumes: mounted where the flags look, backed by something.
	mounts := map[string]string{}
	for _, m := range c["volumeMounts"].([]any) {
		mm := m.(map[string]any)
		mounts[mm["name"].(string)] = mm["mountPath"].(string)
	}
	require.Equal(t, cfg.Dir, mounts["warcs"])
	require.True(t, strings.HasPrefix(cfg.ProxyAuthFile, mounts["proxy-auth"]+"/"), "proxy auth file %s under %s", cfg.ProxyAuthFile, mounts["proxy-auth"])
	require.True(t, strings.HasPrefix(cfg.CACert, mounts["ca"]+"/"))
	require.Equal(t, "warcs", get(t, sts, "spec", "volumeClaimTemplates", 0, "metadata", "name"))
	vols := map[string]map[string]any{}
	for _, v := range pod["volumes"].([]any) {
		vols[v.(map[string]any)["name"].(string)] = v.(map[string]any)
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
	require.Equal(t, "warcproxy-headless", get(t, sts, "spec", "serviceName"))
}

// k8sTyped decodes every manifest strictly into its k8s.io/api type, as
// the API server's strict field validation (kubectl apply
// --validate=strict) does: an unknown or duplicate field, a wrong type, or
// a kind/apiVersion the scheme does not serve (such as a removed beta
// API) is an error. Keyed "Kind/name".
func k8sTyped(t *testing.T) map[string]runtime.Object {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, networkingv1.AddToScheme} {
		require.NoError(t, add(scheme))
	}
	dec := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
	objs := map[string]runtime.Object{}
	for where, doc := range k8sDocs(t) {
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
	objs := k8sTyped(t)
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
