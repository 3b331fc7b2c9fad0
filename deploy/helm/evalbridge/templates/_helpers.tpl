{{- define "evalbridge.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "evalbridge.fullname" -}}
{{- if contains .Chart.Name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{- define "evalbridge.selectorLabels" -}}
app.kubernetes.io/name: {{ include "evalbridge.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: {{ .Values.mode }}
{{- end }}

{{- define "evalbridge.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "evalbridge.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: evalbridge
{{- end }}

{{- define "evalbridge.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "evalbridge.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "evalbridge.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{- define "evalbridge.validate" -}}
{{- if not (has .Values.mode (list "gateway" "tier2")) }}
{{- fail (printf "mode must be gateway or tier2, not %q" .Values.mode) }}
{{- end }}
{{- if not (has .Values.traceAffinity (list "" "perClient")) }}
{{- fail (printf "traceAffinity must be empty or perClient, not %q" .Values.traceAffinity) }}
{{- end }}
{{- if and (eq .Values.mode "gateway") (include "evalbridge.runsEval" .) (or (gt (int .Values.replicaCount) 1) .Values.autoscaling.enabled) (ne .Values.traceAffinity "perClient") }}
{{- fail (printf "a gateway that runs eval on %s splits traces: spans of one trace sent by two clients land on two pods, each scoring part of the trace. If every trace's spans come from one client (one agent process exporting its own spans), set traceAffinity: perClient. Otherwise run the tier-1/tier-2 pair: examples/tier1-kafka.yaml (OTLP in, Kafka partitioned by trace id) in front of examples/tier2-statefulset.yaml (a consumer group that scores); docs/production.md, \"One collector per trace\"." (ternary "an autoscaler" (printf "%d replicas" (int .Values.replicaCount)) .Values.autoscaling.enabled)) }}
{{- end }}
{{- if and (eq .Values.mode "tier2") .Values.autoscaling.enabled }}
{{- fail "autoscaling is for mode gateway: a tier2 StatefulSet is scaled with replicaCount (each pod keeps its partitions and its volume)" }}
{{- end }}
{{- end }}

{{/*
The tier 2 configuration (contract §12, README "Fleets on Kafka"): two Kafka
receivers in one consumer group with static membership ids from the pod name
and the copartition balancer; eval with durable holding on file_storage; the
exporters' queues on the same volume; no batch processor after eval.
*/}}
{{- define "evalbridge.tier2Config" -}}
{{- $k := .Values.tier2.kafka -}}
{{- $dir := .Values.tier2.persistence.mountPath -}}
extensions:
  health_check:
    endpoint: 0.0.0.0:{{ .Values.ports.health }}
  # recreate: a corrupt file is moved aside and a new one created, so the pod starts (contract §22).
  file_storage/queue:
    directory: {{ $dir }}/queue
    create_directory: true
    recreate: true
  file_storage/eval:
    directory: {{ $dir }}/eval
    create_directory: true
    recreate: true
  copartition_balancer:
    collector_id: ${env:EVALBRIDGE_COLLECTOR_ID}
receivers:
{{- range $signal, $topic := dict "traces" $k.tracesTopic "logs" $k.logsTopic }}
  kafka/{{ $signal }}:
    brokers: {{ toJson $k.brokers }}
    client_id: ${env:EVALBRIDGE_COLLECTOR_ID}-{{ $signal }}
    group_id: {{ $k.groupId }}
    group_instance_id: ${env:EVALBRIDGE_COLLECTOR_ID}-{{ $signal }}
    group_rebalance_strategies: [copartition_balancer]
    session_timeout: {{ $k.sessionTimeout }}
    heartbeat_interval: {{ $k.heartbeatInterval }}
    initial_offset: {{ $k.initialOffset }}
    autocommit:
      enable: true
      interval: 1s
    message_marking:
      after: true
      on_error: false
      on_permanent_error: true
    error_backoff:
      enabled: true
      initial_interval: 1s
      max_interval: 10s
      max_elapsed_time: 0
    {{ $signal }}:
      topics: [{{ $topic }}]
      encoding: otlp_proto
{{- end }}
processors:
  memory_limiter:
    check_interval: 1s
    limit_percentage: 80
    spike_limit_percentage: 20
  eval:
    {{- toYaml (merge (dict "storage" "file_storage/eval") (deepCopy .Values.tier2.eval)) | nindent 4 }}
connectors:
  evalmetrics: {}
exporters:
  prometheus:
    endpoint: 0.0.0.0:{{ .Values.ports.metrics }}
    enable_open_metrics: true
  otlp_http:
    endpoint: {{ .Values.tier2.backend.endpoint }}
    sending_queue:
      enabled: true
      storage: file_storage/queue
      queue_size: 10000
      batch:
        flush_timeout: 1s
    retry_on_failure:
      enabled: true
      max_elapsed_time: 0
service:
  extensions: [health_check, file_storage/queue, file_storage/eval, copartition_balancer]
  telemetry:
    metrics:
      readers:
        - pull:
            exporter:
              prometheus:
                host: 0.0.0.0
                port: {{ .Values.ports.telemetry }}
  pipelines:
    traces:
      receivers: [kafka/traces]
      processors: [memory_limiter, eval]
      exporters: [otlp_http]
    logs:
      receivers: [kafka/logs]
      processors: [memory_limiter, eval]
      exporters: [otlp_http, evalmetrics]
    metrics:
      receivers: [evalmetrics]
      exporters: [prometheus]
{{- end }}

{{/*
"true" when the pods' config runs eval in a pipeline (the image's default
config does), else empty: the metrics port (the prometheus exporter of the
evaluation metrics) is exposed only then.
*/}}
{{- define "evalbridge.runsEval" -}}
{{- $config := include "evalbridge.config" . -}}
{{- if not $config }}true
{{- else }}
{{- $found := false }}
{{- range $_, $p := (((fromYaml $config).service | default dict).pipelines | default dict) }}
{{- range ($p.processors | default list) }}
{{- if or (eq . "eval") (hasPrefix "eval/" .) }}{{ $found = true }}{{ end }}
{{- end }}
{{- end }}
{{- if $found }}true{{ end }}
{{- end }}
{{- end }}

{{/* The container's and the Service's ports: every port of .Values.ports, but metrics when the config runs no eval. */}}
{{- define "evalbridge.ports" -}}
{{- $runsEval := include "evalbridge.runsEval" . -}}
{{- $out := dict }}
{{- range $name, $port := .Values.ports }}
{{- if or (ne $name "metrics") $runsEval }}{{ $_ := set $out $name $port }}{{ end }}
{{- end }}
{{- toYaml $out }}
{{- end }}

{{/* The configuration the pods run, as a map; empty: the image's own. */}}
{{- define "evalbridge.config" -}}
{{- if eq .Values.mode "tier2" }}
{{- toYaml (mustMergeOverwrite (fromYaml (include "evalbridge.tier2Config" .)) (deepCopy .Values.config)) }}
{{- else if .Values.config }}
{{- toYaml .Values.config }}
{{- end }}
{{- end }}

{{- define "evalbridge.podTemplate" -}}
{{- $config := include "evalbridge.config" . -}}
metadata:
  labels:
    {{- include "evalbridge.selectorLabels" . | nindent 4 }}
    {{- with .Values.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  annotations:
    checksum/config: {{ $config | sha256sum }}
    {{- with .Values.podAnnotations }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  serviceAccountName: {{ include "evalbridge.serviceAccountName" . }}
  {{- with .Values.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  securityContext:
    {{- toYaml .Values.podSecurityContext | nindent 4 }}
  terminationGracePeriodSeconds: {{ .Values.terminationGracePeriodSeconds }}
  containers:
    - name: otelcol-evalbridge
      image: {{ include "evalbridge.image" . }}
      imagePullPolicy: {{ .Values.image.pullPolicy }}
      {{- if or $config .Values.extraArgs }}
      args:
        {{- if $config }}
        - --config=/conf/config.yaml
        {{- else }}
        - --config=/etc/otelcol-evalbridge/config.yaml
        {{- end }}
        {{- range .Values.extraArgs }}
        - {{ . | quote }}
        {{- end }}
      {{- end }}
      env:
        - name: POD_NAME
          valueFrom: {fieldRef: {fieldPath: metadata.name}}
        - name: POD_NAMESPACE
          valueFrom: {fieldRef: {fieldPath: metadata.namespace}}
        {{- if eq .Values.mode "tier2" }}
        # The static group membership id and co-partitioning key: a StatefulSet pod's name is stable across restarts.
        - name: EVALBRIDGE_COLLECTOR_ID
          value: $(POD_NAME)
        {{- end }}
        {{- with .Values.env }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      {{- with .Values.envFrom }}
      envFrom:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      ports:
        {{- range $name, $port := fromYaml (include "evalbridge.ports" .) }}
        - name: {{ $name }}
          containerPort: {{ $port }}
          protocol: TCP
        {{- end }}
      livenessProbe:
        httpGet: {path: /, port: health}
        periodSeconds: 10
      readinessProbe:
        httpGet: {path: /, port: health}
        periodSeconds: 5
      securityContext:
        {{- toYaml .Values.securityContext | nindent 8 }}
      resources:
        {{- toYaml .Values.resources | nindent 8 }}
      {{- if or $config (eq .Values.mode "tier2") }}
      volumeMounts:
        {{- if $config }}
        - name: config
          mountPath: /conf
          readOnly: true
        {{- end }}
        {{- if eq .Values.mode "tier2" }}
        - name: data
          mountPath: {{ .Values.tier2.persistence.mountPath }}
        {{- end }}
      {{- end }}
  {{- if $config }}
  volumes:
    - name: config
      configMap:
        name: {{ include "evalbridge.fullname" . }}
        items:
          - key: config.yaml
            path: config.yaml
  {{- end }}
  {{- with .Values.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.topologySpreadConstraints }}
  topologySpreadConstraints:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}
