package main

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/kafkaexporter"
	"github.com/open-telemetry/opentelemetry-collector-contrib/receiver/kafkareceiver"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/exporter/otlphttpexporter"
	"go.opentelemetry.io/collector/otelcol/otelcoltest"
	"go.opentelemetry.io/collector/pipeline"

	"github.com/evalbridge/evalbridge/exporter/webhookexporter"
	"github.com/evalbridge/evalbridge/extension/copartitionbalancer"
)

// TestFleetExampleConfigs loads examples/fleet/tier1.yaml and tier2.yaml with
// the distribution's factories and checks the settings the fleet's
// guarantees rest on (README "Fleets on Kafka").
func TestFleetExampleConfigs(t *testing.T) {
	factories, err := components()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("EVALBRIDGE_COLLECTOR_ID", "tier2-7")
	t.Setenv("KAFKA_BROKERS", "kafka-0.kafka:9092")

	t.Run("tier1", func(t *testing.T) {
		cfg, err := otelcoltest.LoadConfigAndValidate(filepath.Join("..", "..", "examples", "fleet", "tier1.yaml"), factories)
		if err != nil {
			t.Fatal(err)
		}
		k := cfg.Exporters[component.MustNewID("kafka")].(*kafkaexporter.Config)
		if !k.PartitionTracesByID || !k.PartitionLogsByTraceID {
			t.Errorf("partition_traces_by_id = %v, partition_logs_by_trace_id = %v, want both true", k.PartitionTracesByID, k.PartitionLogsByTraceID)
		}
		if !slices.Equal(k.ClientConfig.Brokers, []string{"kafka-0.kafka:9092"}) {
			t.Errorf("brokers = %v", k.ClientConfig.Brokers)
		}
		if !k.QueueBatchConfig.HasValue() || k.QueueBatchConfig.Get().StorageID == nil ||
			k.QueueBatchConfig.Get().StorageID.String() != "file_storage/queue" {
			t.Errorf("the kafka exporter's sending queue is not on file_storage/queue")
		}
		for _, sig := range []pipeline.Signal{pipeline.SignalTraces, pipeline.SignalLogs} {
			p := cfg.Service.Pipelines[pipeline.NewID(sig)]
			if p == nil || !slices.Equal(ids(p.Exporters), []string{"kafka"}) {
				t.Errorf("%s pipeline does not export to kafka", sig)
			}
		}
	})

	t.Run("tier2", func(t *testing.T) {
		cfg, err := otelcoltest.LoadConfigAndValidate(filepath.Join("..", "..", "examples", "fleet", "tier2.yaml"), factories)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"traces", "logs"} {
			r := cfg.Receivers[component.MustNewIDWithName("kafka", name)].(*kafkareceiver.Config)
			if want := "tier2-7-" + name; r.ConsumerConfig.GroupInstanceID != want {
				t.Errorf("kafka/%s group_instance_id = %q, want %q", name, r.ConsumerConfig.GroupInstanceID, want)
			}
			if r.ConsumerConfig.GroupID != "evalbridge" {
				t.Errorf("kafka/%s group_id = %q", name, r.ConsumerConfig.GroupID)
			}
			if !r.MessageMarking.After || r.MessageMarking.OnError {
				t.Errorf("kafka/%s message_marking = %+v, want after and not on_error", name, r.MessageMarking)
			}
			if got := r.ConsumerConfig.GroupRebalanceStrategies; len(got) != 1 || string(got[0]) != "copartition_balancer" {
				t.Errorf("kafka/%s group_rebalance_strategies = %v, want [copartition_balancer]", name, got)
			}
		}
		bal := cfg.Extensions[component.NewID(copartitionbalancer.Type)].(*copartitionbalancer.Config)
		if bal.CollectorID != "tier2-7" {
			t.Errorf("copartition_balancer collector_id = %q", bal.CollectorID)
		}
		backend := cfg.Exporters[component.MustNewID("otlp_http")].(*otlphttpexporter.Config)
		if !backend.QueueConfig.HasValue() || backend.QueueConfig.Get().StorageID == nil {
			t.Error("otlp_http: the sending queue is not persistent")
		}
		hook := cfg.Exporters[component.NewID(webhookexporter.Type)].(*webhookexporter.Config)
		if !hook.QueueConfig.HasValue() || hook.QueueConfig.Get().StorageID == nil {
			t.Error("webhook: the sending queue is not persistent")
		}
		traces := cfg.Service.Pipelines[pipeline.NewID(pipeline.SignalTraces)]
		if got, want := ids(traces.Processors), []string{"memory_limiter", "eval"}; !slices.Equal(got, want) {
			// a batch processor after eval would hold released spans in memory
			t.Errorf("traces processors = %v, want %v", got, want)
		}
	})
}
