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

{{/* The multicluster and kubernetes stanzas of the default Corefiles. The
kubernetes plugin's zones are kubernetes.zones, never derived from
multicluster.fallback: with fallback [] the kubernetes stanza still serves the
cluster domain ("coredns-mcs.validate" refuses zones without it). */}}
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
kubernetes {{ join " " .Values.kubernetes.zones }} {
{{- range .Values.kubernetes.options }}
    {{ . }}
{{- end }}
{{- if .Values.isClusterService }}
    fallthrough in-addr.arpa ip6.arpa
{{- end }}
}
{{- end -}}

{{/* A zone name as the checks compare it: lower case, no trailing dot ("" is the root). */}}
{{- define "coredns-mcs.zone" -}}
{{- . | toString | lower | trimSuffix "." -}}
{{- end -}}

{{/*
The DNS ports of the Corefile, as JSON: a list of {port, servicePort}, the
first the one the startup probe connects to. Default Corefile: 53. servers:
each entry's port (default 53) and servicePort (default its port), as the
coredns chart's "coredns.servicePorts" and "coredns.containerPorts" read
them (github.com/coredns/helm, charts/coredns/templates/_helpers.tpl): the
first entry of a port gives its servicePort. Every port serves UDP and TCP
(the schema allows only the dns:// scheme; DNS clients retry a truncated
answer over TCP, so TCP is always on and use_tcp changes nothing).
*/}}
{{- define "coredns-mcs.dnsPorts" -}}
{{- $ports := list -}}
{{- if .Values.servers -}}
{{- $seen := dict -}}
{{- $servicePorts := dict -}}
{{- range .Values.servers -}}
{{- $port := int (default 53 .port) -}}
{{- if not (hasKey $seen (toString $port)) -}}
{{- $servicePort := int (default $port .servicePort) -}}
{{- if hasKey $servicePorts (toString $servicePort) -}}
{{- fail (printf "servers: ports %d and %v both want Service port %d" $port (get $servicePorts (toString $servicePort)) $servicePort) -}}
{{- end -}}
{{- $_ := set $seen (toString $port) true -}}
{{- $_ := set $servicePorts (toString $servicePort) $port -}}
{{- $ports = append $ports (dict "port" $port "servicePort" $servicePort) -}}
{{- end -}}
{{- end -}}
{{- else -}}
{{- $ports = list (dict "port" 53 "servicePort" 53) -}}
{{- end -}}
{{- toJson $ports -}}
{{- end -}}

{{/* The name of a DNS port: dns and dns-tcp for the first, dns-PORT and dns-tcp-PORT for others. */}}
{{- define "coredns-mcs.portName" -}}
{{- $p := index . 0 -}}{{- $i := index . 1 -}}{{- $tcp := index . 2 -}}
{{- if $tcp }}dns-tcp{{ else }}dns{{ end }}{{ if $i }}-{{ $p }}{{ end -}}
{{- end -}}

{{/* The metrics port: the first prometheus plugin's of servers, else 9153. */}}
{{- define "coredns-mcs.metricsPort" -}}
{{- $port := 9153 -}}
{{- $found := false -}}
{{- range .Values.servers -}}
{{- range .plugins -}}
{{- if and (eq .name "prometheus") (not $found) -}}
{{- $found = true -}}
{{- with .parameters -}}
{{- $port = regexSplit ":" (toString .) -1 | last | int -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $port -}}
{{- end -}}

{{/*
Values that would break DNS and that the schema cannot see, since they
depend on each other; helm install, template and lint --strict fail on them.
*/}}
{{- define "coredns-mcs.validate" -}}
{{- if hasKey .Values.multicluster "kubernetesOptions" -}}
{{- fail "multicluster.kubernetesOptions moved to kubernetes.options (and the kubernetes plugin's zones to kubernetes.zones)" -}}
{{- end -}}
{{- $domain := include "coredns-mcs.zone" .Values.clusterDomain -}}
{{- if .Values.servers -}}
{{- $health := false -}}{{- $ready := false -}}{{- $served := false -}}
{{- range $s := .Values.servers -}}
{{- $zones := list -}}
{{- range ($s.zones | default (list (dict "zone" "."))) -}}
{{- $zones = append $zones (include "coredns-mcs.zone" (default "." .zone)) -}}
{{- end -}}
{{- range $s.plugins -}}
{{- $params := toString (default "" .parameters) -}}
{{- if and (eq .name "health") (or (not $params) (hasSuffix ":8080" $params)) -}}{{- $health = true -}}{{- end -}}
{{- if and (eq .name "ready") (or (not $params) (hasSuffix ":8181" $params)) -}}{{- $ready = true -}}{{- end -}}
{{- if eq .name "kubernetes" -}}
{{- $kzones := $zones -}}
{{- if $params -}}
{{- $kzones = list -}}
{{- range splitList " " $params -}}{{- if . -}}{{- $kzones = append $kzones (include "coredns-mcs.zone" .) -}}{{- end -}}{{- end -}}
{{- end -}}
{{- if has $domain $kzones -}}{{- $served = true -}}{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if not $health -}}
{{- fail "servers: no health plugin on :8080, which the liveness probe asks (GET :8080/health): every pod would be restarted" -}}
{{- end -}}
{{- if not $ready -}}
{{- fail "servers: no ready plugin on :8181, which the readiness probe asks (GET :8181/ready): no pod would ever serve" -}}
{{- end -}}
{{- if and .Values.isClusterService (not $served) -}}
{{- fail (printf "servers: no kubernetes plugin serves %s (clusterDomain): as the cluster DNS every Service name would fail" $domain) -}}
{{- end -}}
{{- else -}}
{{- $kzones := list -}}
{{- range .Values.kubernetes.zones -}}{{- $kzones = append $kzones (include "coredns-mcs.zone" .) -}}{{- end -}}
{{- if not (has $domain $kzones) -}}
{{- fail (printf "kubernetes.zones %v lacks %s (clusterDomain): every Service name would fail" .Values.kubernetes.zones $domain) -}}
{{- end -}}
{{- range .Values.multicluster.fallback -}}
{{- if not (has (include "coredns-mcs.zone" .) $kzones) -}}
{{- fail (printf "multicluster.fallback %s is not in kubernetes.zones: its local names would have no answer" .) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if .Values.isClusterService -}}
{{- $has53 := false -}}
{{- range (include "coredns-mcs.dnsPorts" . | fromJsonArray) -}}{{- if eq (int .servicePort) 53 -}}{{- $has53 = true -}}{{- end -}}{{- end -}}
{{- if not $has53 -}}
{{- fail "isClusterService: no server on Service port 53, where pods ask the cluster DNS (set servers[].servicePort: 53)" -}}
{{- end -}}
{{- end -}}
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
    bufsize 1232
    health {
        lameduck 5s
    }
    ready
{{ include "coredns-mcs.stanzas" . | indent 4 }}
    prometheus :9153
    forward . /etc/resolv.conf
    cache 30 {
        denial 10000 30 1
    }
    loop
    reload
    loadbalance
}
{{- else -}}
.:53 {
    errors
    bufsize 1232
    health {
        lameduck 5s
    }
    ready
{{ include "coredns-mcs.stanzas" . | indent 4 }}
    prometheus :9153
    cache 5 {
        denial 10000 5 1
    }
    reload
    loadbalance
}
{{- end -}}
{{- end -}}
