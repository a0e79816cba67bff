{{/* The release's full name, as charts usually make it. */}}
{{- define "coredns-mcs.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "coredns-mcs.serviceName" -}}
{{- if .Values.service.name -}}{{ .Values.service.name }}{{- else if .Values.isClusterService -}}kube-dns{{- else -}}{{ include "coredns-mcs.fullname" . }}{{- end -}}
{{- end -}}

{{- define "coredns-mcs.serviceAccountName" -}}
{{- if .Values.serviceAccount.name -}}{{ .Values.serviceAccount.name }}{{- else if .Values.isClusterService -}}coredns{{- else -}}{{ include "coredns-mcs.fullname" . }}{{- end -}}
{{- end -}}

{{- define "coredns-mcs.labels" -}}
app.kubernetes.io/name: coredns-mcs
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* Pods are selected by these; the cluster DNS keeps k8s-app: kube-dns, which other tools look for. */}}
{{- define "coredns-mcs.selectorLabels" -}}
app.kubernetes.io/name: coredns-mcs
app.kubernetes.io/instance: {{ .Release.Name }}
{{- if .Values.isClusterService }}
k8s-app: kube-dns
{{- end }}
{{- end -}}

{{/* The multicluster and kubernetes stanzas of the default Corefiles. */}}
{{- define "coredns-mcs.stanzas" -}}
multicluster {{ join " " .Values.multicluster.zones }} {
{{- with .Values.multicluster.fallback }}
    fallback {{ join " " . }}
{{- end }}
{{- range .Values.multicluster.options }}
    {{ . }}
{{- end }}
{{- if not .Values.isClusterService }}
    standalone
{{- end }}
}
kubernetes {{ join " " (concat .Values.multicluster.fallback (without .Values.multicluster.zones "clusterset.local")) }} {
{{- range .Values.multicluster.kubernetesOptions }}
    {{ . }}
{{- end }}
{{- if .Values.isClusterService }}
    fallthrough in-addr.arpa ip6.arpa
{{- end }}
}
{{- end -}}

{{/* The Corefile: servers in the coredns chart's form, or the default of the mode. */}}
{{- define "coredns-mcs.corefile" -}}
{{- if .Values.servers -}}
{{- range $s := .Values.servers }}
{{ range $i, $z := ($s.zones | default (list (dict "zone" "."))) }}{{ if $i }} {{ end }}{{ $z.scheme | default "" }}{{ $z.zone | default "." }}:{{ $s.port | default 53 }}{{ end }} {
    {{- range $s.plugins }}
    {{ .name }}{{ with .parameters }} {{ . }}{{ end }}{{ if .configBlock }} {
{{ .configBlock | indent 8 }}
    }{{ end }}
    {{- end }}
}
{{- end }}
{{- else if .Values.isClusterService -}}
.:53 {
    errors
    health {
        lameduck 5s
    }
    ready
{{ include "coredns-mcs.stanzas" . | indent 4 }}
    prometheus :9153
    forward . /etc/resolv.conf
    cache 30
    loop
    reload
    loadbalance
}
{{- else -}}
.:53 {
    errors
    health {
        lameduck 5s
    }
    ready
{{ include "coredns-mcs.stanzas" . | indent 4 }}
    prometheus :9153
    cache 5
    reload
    loadbalance
}
{{- end -}}
{{- end -}}
