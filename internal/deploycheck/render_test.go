//go:build deploycheck

package deploycheck

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	yamlv3 "gopkg.in/yaml.v3"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// The Prometheus Operator's and the OpenTelemetry Operator's types are not
// in k8s.io/api, and their Go modules would bring their controllers'
// dependencies: these minimal structs hold the fields the chart and
// deploy/operator use, so a misspelt or misplaced field fails strict decoding.
type serviceMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Selector  metav1.LabelSelector `json:"selector"`
		Endpoints []struct {
			Port     string `json:"port"`
			Interval string `json:"interval,omitempty"`
			Path     string `json:"path,omitempty"`
		} `json:"endpoints"`
	} `json:"spec"`
}

type prometheusRule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Groups []struct {
			Name     string `json:"name"`
			Interval string `json:"interval,omitempty"`
			Rules    []struct {
				Record      string            `json:"record,omitempty"`
				Alert       string            `json:"alert,omitempty"`
				Expr        string            `json:"expr"`
				For         string            `json:"for,omitempty"`
				Labels      map[string]string `json:"labels,omitempty"`
				Annotations map[string]string `json:"annotations,omitempty"`
			} `json:"rules"`
		} `json:"groups"`
	} `json:"spec"`
}

type openTelemetryCollector struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Mode          string `json:"mode"`
		Replicas      *int32 `json:"replicas,omitempty"`
		Observability struct {
			Metrics struct {
				EnableMetrics bool `json:"enableMetrics,omitempty"`
			} `json:"metrics"`
		} `json:"observability"`
		Image                string                         `json:"image"`
		Args                 map[string]string              `json:"args,omitempty"`
		Env                  []corev1.EnvVar                `json:"env,omitempty"`
		PodSecurityContext   *corev1.PodSecurityContext     `json:"podSecurityContext,omitempty"`
		VolumeClaimTemplates []corev1.PersistentVolumeClaim `json:"volumeClaimTemplates,omitempty"`
		VolumeMounts         []corev1.VolumeMount           `json:"volumeMounts,omitempty"`
		Config               map[string]any                 `json:"config"`
	} `json:"spec"`
}

func newObject(apiVersion, kind string) (any, error) {
	switch apiVersion + "/" + kind {
	case "v1/ConfigMap":
		return &corev1.ConfigMap{}, nil
	case "v1/Service":
		return &corev1.Service{}, nil
	case "v1/ServiceAccount":
		return &corev1.ServiceAccount{}, nil
	case "apps/v1/Deployment":
		return &appsv1.Deployment{}, nil
	case "apps/v1/StatefulSet":
		return &appsv1.StatefulSet{}, nil
	case "autoscaling/v2/HorizontalPodAutoscaler":
		return &autoscalingv2.HorizontalPodAutoscaler{}, nil
	case "monitoring.coreos.com/v1/ServiceMonitor":
		return &serviceMonitor{}, nil
	case "monitoring.coreos.com/v1/PrometheusRule":
		return &prometheusRule{}, nil
	case "opentelemetry.io/v1beta1/OpenTelemetryCollector":
		return &openTelemetryCollector{}, nil
	}
	return nil, fmt.Errorf("no Go type known for %s %s", apiVersion, kind)
}

// decodeAll strictly decodes every YAML document of a file into its API
// type: an unknown or misplaced field, a duplicate key or a wrong type fails.
func decodeAll(t *testing.T, path string) []any {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var objs []any
	dec := yamlv3.NewDecoder(bytes.NewReader(raw))
	for {
		var node yamlv3.Node
		if err := dec.Decode(&node); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		doc, err := yamlv3.Marshal(&node)
		if err != nil {
			t.Fatal(err)
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if tm.Kind == "" {
			continue // an empty document
		}
		obj, err := newObject(tm.APIVersion, tm.Kind)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			t.Errorf("%s: %s %s does not decode strictly: %v", path, tm.APIVersion, tm.Kind, err)
			continue
		}
		objs = append(objs, obj)
	}
	return objs
}

func kind(o any) string {
	s := fmt.Sprintf("%T", o)
	s = s[strings.LastIndex(s, ".")+1:]
	return strings.ToUpper(s[:1]) + s[1:]
}

// TestRenderedChart decodes what `helm template` rendered for each example
// values file ($EVALBRIDGE_RENDERED_DIR/<example>.yaml), checks what each
// mode must hold, and writes each collector config it carries to
// <example>.config.yaml for `otelcol-evalbridge validate`.
func TestRenderedChart(t *testing.T) {
	dir := renderedDir(t)
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	files = slices.DeleteFunc(files, func(f string) bool { return strings.HasSuffix(f, ".config.yaml") })
	if len(files) == 0 {
		t.Fatalf("no rendered manifests in %s", dir)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		t.Run(name, func(t *testing.T) {
			objs := decodeAll(t, f)
			var kinds []string
			var sts *appsv1.StatefulSet
			var dep *appsv1.Deployment
			var config string
			var services []*corev1.Service
			var monitor *serviceMonitor
			for _, o := range objs {
				kinds = append(kinds, kind(o))
				switch o := o.(type) {
				case *appsv1.StatefulSet:
					sts = o
				case *appsv1.Deployment:
					dep = o
				case *corev1.ConfigMap:
					config = o.Data["config.yaml"]
				case *corev1.Service:
					services = append(services, o)
				case *serviceMonitor:
					monitor = o
				}
			}
			t.Logf("%s: %s", name, strings.Join(kinds, ", "))
			if config != "" {
				if err := os.WriteFile(filepath.Join(dir, name+".config.yaml"), []byte(config), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var pod *corev1.PodTemplateSpec
			switch {
			case sts != nil && dep == nil:
				pod = &sts.Spec.Template
				checkTier2(t, sts, config)
			case dep != nil && sts == nil:
				pod = &dep.Spec.Template
			default:
				t.Fatalf("want one Deployment or one StatefulSet, got kinds %v", kinds)
			}
			c := pod.Spec.Containers[0]
			checkMetricsExposed(t, name, config, c, services, monitor)
			if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Port.String() != "health" {
				t.Error("no readiness probe on the health port (health_check)")
			}
			if len(c.Command) != 0 {
				t.Errorf("command %q: the image's ENTRYPOINT is the binary; the chart passes only args", c.Command)
			}
		})
	}
}

func checkTier2(t *testing.T, sts *appsv1.StatefulSet, config string) {
	if len(sts.Spec.VolumeClaimTemplates) != 1 {
		t.Fatalf("StatefulSet: %d volume claim templates, want 1", len(sts.Spec.VolumeClaimTemplates))
	}
	claim := sts.Spec.VolumeClaimTemplates[0].Name
	c := sts.Spec.Template.Spec.Containers[0]
	var mount string
	for _, m := range c.VolumeMounts {
		if m.Name == claim {
			mount = m.MountPath
		}
	}
	if mount == "" {
		t.Fatalf("the container does not mount the claim %q", claim)
	}
	var id string
	for _, e := range c.Env {
		if e.Name == "EVALBRIDGE_COLLECTOR_ID" {
			id = e.Value
		}
	}
	if id != "$(POD_NAME)" {
		t.Errorf("EVALBRIDGE_COLLECTOR_ID = %q, want $(POD_NAME) (the StatefulSet pod's stable name)", id)
	}
	var cfg struct {
		Extensions map[string]map[string]any `json:"extensions"`
		Receivers  map[string]map[string]any `json:"receivers"`
		Processors map[string]map[string]any `json:"processors"`
		Exporters  map[string]map[string]any `json:"exporters"`
		Service    map[string]any            `json:"service"`
	}
	if err := yaml.Unmarshal([]byte(config), &cfg); err != nil {
		t.Fatal(err)
	}
	for _, sig := range []string{"traces", "logs"} {
		r := cfg.Receivers["kafka/"+sig]
		if r["group_instance_id"] != "${env:EVALBRIDGE_COLLECTOR_ID}-"+sig {
			t.Errorf("kafka/%s group_instance_id = %v", sig, r["group_instance_id"])
		}
		if fmt.Sprint(r["group_rebalance_strategies"]) != "[copartition_balancer]" {
			t.Errorf("kafka/%s group_rebalance_strategies = %v", sig, r["group_rebalance_strategies"])
		}
	}
	for id, ext := range cfg.Extensions {
		if strings.HasPrefix(id, "file_storage") && !strings.HasPrefix(fmt.Sprint(ext["directory"]), mount+"/") {
			t.Errorf("%s directory %v is not on the volume %s", id, ext["directory"], mount)
		}
	}
	if cfg.Processors["eval"]["storage"] != "file_storage/eval" {
		t.Errorf("eval storage = %v", cfg.Processors["eval"]["storage"])
	}
	for id, e := range cfg.Exporters {
		if id == "prometheus" {
			continue // served on scrape: nothing queued
		}
		q, _ := e["sending_queue"].(map[string]any)
		if q["storage"] == nil {
			t.Errorf("exporter %s has no persistent queue (sending_queue.storage)", id)
		}
	}
}

// TestOperatorResources decodes deploy/operator/*.yaml strictly and writes
// each spec.config to $EVALBRIDGE_RENDERED_DIR/operator-<name>.config.yaml.
func TestOperatorResources(t *testing.T) {
	dir := renderedDir(t)
	files, _ := filepath.Glob("../../deploy/operator/*.yaml")
	if len(files) == 0 {
		t.Fatal("no deploy/operator/*.yaml")
	}
	modes := map[string]bool{}
	for _, f := range files {
		for _, o := range decodeAll(t, f) {
			c, ok := o.(*openTelemetryCollector)
			if !ok {
				t.Errorf("%s: a %s, want OpenTelemetryCollector", f, kind(o))
				continue
			}
			modes[c.Spec.Mode] = true
			raw, err := yaml.Marshal(c.Spec.Config)
			if err != nil {
				t.Fatal(err)
			}
			if runsEval(string(raw)) {
				if !c.Spec.Observability.Metrics.EnableMetrics {
					t.Errorf("%s: runs eval without spec.observability.metrics.enableMetrics (no ServiceMonitor)", f)
				}
				if c.Spec.Mode == "deployment" && (c.Spec.Replicas == nil || *c.Spec.Replicas > 1) {
					t.Errorf("%s: a deployment that runs eval on several replicas splits traces (no trace affinity behind the Operator's Service)", f)
				}
			}
			checkShippedConfig(t, filepath.Base(f), string(raw), "0.0.0.0")
			if !strings.Contains(c.Spec.Image, "otelcol-evalbridge") {
				t.Errorf("%s: spec.image %q is not the otelcol-evalbridge image", f, c.Spec.Image)
			}
			if c.Spec.Mode == "statefulset" && len(c.Spec.VolumeClaimTemplates) == 0 {
				t.Errorf("%s: a statefulset without a volume claim for file_storage", f)
			}
			writeRendered(t, dir, "operator-"+c.Name+".config.yaml", c.Spec.Config)
			t.Logf("%s: OpenTelemetryCollector %s, mode %s, image %s", filepath.Base(f), c.Name, c.Spec.Mode, c.Spec.Image)
		}
	}
	if !modes["deployment"] || !modes["statefulset"] {
		t.Errorf("operator modes %v, want a deployment (gateway) and a statefulset (tier 2)", modes)
	}
}

// TestUpstreamChartValues checks deploy/helm/upstream-values.yaml, the values
// that point the upstream opentelemetry-collector chart at this image: its
// mode, image and command name, and its config (keys set to null are the
// upstream defaults it removes) written to
// $EVALBRIDGE_RENDERED_DIR/upstream-chart.config.yaml for validation.
func TestUpstreamChartValues(t *testing.T) {
	dir := renderedDir(t)
	raw, err := os.ReadFile("../../deploy/helm/upstream-values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Mode  string `json:"mode"`
		Image struct {
			Repository string `json:"repository"`
		} `json:"image"`
		Command struct {
			Name string `json:"name"`
		} `json:"command"`
		Config map[string]any `json:"config"`
	}
	if err := yaml.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	if v.Mode == "" || !strings.HasSuffix(v.Image.Repository, "/otelcol-evalbridge") || v.Command.Name != "otelcol-evalbridge" {
		t.Errorf("mode %q, image.repository %q, command.name %q", v.Mode, v.Image.Repository, v.Command.Name)
	}
	config := dropNulls(v.Config)
	writeRendered(t, dir, "upstream-chart.config.yaml", config)
	raw, err = yaml.Marshal(config)
	if err != nil {
		t.Fatal(err)
	}
	checkShippedConfig(t, "upstream-values.yaml", string(raw), "${env:MY_POD_IP}")
}

// shippedConfig is what contract §22 asks of a shipped collector config.
type shippedConfig struct {
	Extensions map[string]map[string]any `json:"extensions"`
	Connectors map[string]any            `json:"connectors"`
	Exporters  map[string]map[string]any `json:"exporters"`
	Service    struct {
		Telemetry struct {
			Metrics struct {
				Readers []struct {
					Pull struct {
						Exporter struct {
							Prometheus struct {
								Host string `json:"host"`
								Port int    `json:"port"`
							} `json:"prometheus"`
						} `json:"exporter"`
					} `json:"pull"`
				} `json:"readers"`
			} `json:"metrics"`
		} `json:"telemetry"`
		Pipelines map[string]struct {
			Receivers  []string `json:"receivers"`
			Processors []string `json:"processors"`
			Exporters  []string `json:"exporters"`
		} `json:"pipelines"`
	} `json:"service"`
}

func runsEval(config string) bool {
	var c shippedConfig
	if err := yaml.Unmarshal([]byte(config), &c); err != nil {
		return false
	}
	for _, p := range c.Service.Pipelines {
		for _, id := range p.Processors {
			if id == "eval" || strings.HasPrefix(id, "eval/") {
				return true
			}
		}
	}
	return false
}

// checkShippedConfig: the collector's own telemetry on host:8888; with
// eval, evalmetrics fed by a pipeline with eval into the prometheus
// exporter on host:8889; no debug exporter printing span content; every
// file_storage with recreate: true.
func checkShippedConfig(t *testing.T, name, config, host string) {
	t.Helper()
	var c shippedConfig
	if err := yaml.Unmarshal([]byte(config), &c); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	telemetry := ""
	for _, r := range c.Service.Telemetry.Metrics.Readers {
		p := r.Pull.Exporter.Prometheus
		telemetry = fmt.Sprintf("%s:%d", p.Host, p.Port)
	}
	if telemetry != host+":8888" {
		t.Errorf("%s: the collector's telemetry reader is on %q, want %s:8888", name, telemetry, host)
	}
	if runsEval(config) {
		if ep := c.Exporters["prometheus"]["endpoint"]; ep != host+":8889" {
			t.Errorf("%s: runs eval; the prometheus exporter's endpoint is %v, want %s:8889", name, ep, host)
		}
		fed, read := false, false
		for _, p := range c.Service.Pipelines {
			withEval := slices.ContainsFunc(p.Processors, func(id string) bool { return id == "eval" || strings.HasPrefix(id, "eval/") })
			fed = fed || (withEval && slices.Contains(p.Exporters, "evalmetrics"))
			read = read || (slices.Contains(p.Receivers, "evalmetrics") && slices.Contains(p.Exporters, "prometheus"))
		}
		if !fed || !read {
			t.Errorf("%s: runs eval but evalmetrics is not fed by a pipeline with eval (%v) and read into prometheus (%v)", name, fed, read)
		}
	}
	for id, e := range c.Exporters {
		if strings.HasPrefix(id, "debug") {
			if v, _ := e["verbosity"].(string); v != "" && v != "basic" {
				t.Errorf("%s: exporter %s at verbosity %s prints span content", name, id, v)
			}
		}
	}
	for id, e := range c.Extensions {
		if strings.HasPrefix(id, "file_storage") && e["recreate"] != true {
			t.Errorf("%s: %s without recreate: true (a corrupt file would keep the collector from starting)", name, id)
		}
	}
}

// checkMetricsExposed: the container, the Service and the ServiceMonitor
// cover the telemetry port (8888) always, and the metrics port (8889: the
// evaluation metrics) exactly when the pods run eval (the image's own
// config, with no ConfigMap, does).
func checkMetricsExposed(t *testing.T, name, config string, c corev1.Container, services []*corev1.Service, monitor *serviceMonitor) {
	t.Helper()
	eval := config == "" || runsEval(config)
	if config != "" {
		checkShippedConfig(t, name, config, "0.0.0.0")
	}
	want := map[string]int32{"telemetry": 8888}
	if eval {
		want["metrics"] = 8889
	}
	container := map[string]int32{}
	for _, p := range c.Ports {
		container[p.Name] = p.ContainerPort
	}
	service := map[string]int32{}
	for _, s := range services {
		if s.Spec.ClusterIP == "None" {
			continue // the tier 2 headless Service, for pod names
		}
		for _, p := range s.Spec.Ports {
			service[p.Name] = p.Port
		}
	}
	endpoints := map[string]bool{}
	if monitor != nil {
		for _, e := range monitor.Spec.Endpoints {
			endpoints[e.Port] = true
		}
	}
	for _, port := range []string{"metrics", "telemetry"} {
		if want[port] != container[port] || want[port] != service[port] {
			t.Errorf("%s: port %s: container %d, Service %d, want %d (runs eval: %v)", name, port, container[port], service[port], want[port], eval)
		}
		if monitor != nil && endpoints[port] != (want[port] != 0) {
			t.Errorf("%s: ServiceMonitor endpoint %s: %v, want %v", name, port, endpoints[port], want[port] != 0)
		}
	}
	if eval && monitor == nil && name != "defaults" {
		t.Errorf("%s: runs eval without a ServiceMonitor (serviceMonitor.enabled)", name)
	}
}

// renderedDir is $EVALBRIDGE_RENDERED_DIR, where .ci/deploy-check.sh puts
// what it renders and validates the configs the tests write there; without
// it the test skips.
func renderedDir(t *testing.T) string {
	dir := os.Getenv("EVALBRIDGE_RENDERED_DIR")
	if dir == "" {
		t.Skip("EVALBRIDGE_RENDERED_DIR is not set (.ci/deploy-check.sh renders the chart and sets it)")
	}
	return dir
}

// writeRendered writes config as YAML to dir/name.
func writeRendered(t *testing.T, dir, name string, config any) {
	t.Helper()
	b, err := yaml.Marshal(config)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// dropNulls removes the keys set to null, as Helm does when it merges values.
func dropNulls(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := map[string]any{}
	for k, e := range m {
		if e != nil {
			out[k] = dropNulls(e)
		}
	}
	return out
}
