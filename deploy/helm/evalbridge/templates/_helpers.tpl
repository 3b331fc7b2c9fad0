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
  file_storage/queue:
    directory: {{ $dir }}/queue
    create_directory: true
  file_storage/eval:
    directory: {{ $dir }}/eval
    create_directory: true
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
exporters:
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
  pipelines:
    traces:
      receivers: [kafka/traces]
      processors: [memory_limiter, eval]
      exporters: [otlp_http]
    logs:
      receivers: [kafka/logs]
      processors: [memory_limiter, eval]
      exporters: [otlp_http]
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
        {{- range $name, $port := .Values.ports }}
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
