{{/*
caphv.objects: the objects of the given files (config/ of the repository,
under files/), in the release's namespace: each "caphv-system" of the files
becomes the release's namespace. Returns a YAML map {items: [...]}.
*/}}
{{- define "caphv.objects" -}}
{{- $ctx := index . 0 -}}
{{- $items := list -}}
{{- range $path, $_ := $ctx.Files.Glob (index . 1) -}}
{{- if not (has (base $path) (list "kustomization.yaml" "namespace.yaml")) -}}
{{- $text := replace "caphv-system" $ctx.Release.Namespace ($ctx.Files.Get $path) -}}
{{- range $doc := regexSplit "(?m)^---[ \\t]*$" $text -1 -}}
{{- $obj := fromYaml $doc -}}
{{- if $obj.kind -}}
{{- $items = append $items $obj -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- dict "items" $items | toYaml -}}
{{- end -}}

{{- define "caphv.labels" -}}
cluster.x-k8s.io/provider: infrastructure-harvester
app.kubernetes.io/name: caphv
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* caphv.render: one object with the chart's labels added. */}}
{{- define "caphv.render" -}}
{{- $ctx := index . 0 -}}
{{- $obj := index . 1 -}}
{{- $meta := $obj.metadata -}}
{{- $_ := set $meta "labels" (merge (default dict $meta.labels) (include "caphv.labels" $ctx | fromYaml)) -}}
---
{{ toYaml $obj }}
{{- end -}}
