{{/*
Labels of every object: manifests/' own (app.kubernetes.io/part-of, and
app.kubernetes.io/name where manifests/ has it) plus Helm's. Selectors and
pod templates carry manifests/' labels only, so that they match what
`kubectl apply -k manifests/` made (selectors are immutable).
*/}}
{{- define "userquota.labels" -}}
app.kubernetes.io/part-of: userquota
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{- define "userquota.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag }}
{{- end }}

{{/* The webhook's and the scheduler REST API's DNS names, as the API server and the webhook call them. */}}
{{- define "userquota.webhookHost" -}}
userquota-webhook.{{ .Release.Namespace }}.svc
{{- end }}
{{- define "userquota.schedulerRESTHost" -}}
userquota-scheduler-rest.{{ .Release.Namespace }}.svc
{{- end }}

{{/*
userquota.tls: the self-signed CA and the two certificates, as JSON
{"ca", "webhookCert", "webhookKey", "restCert", "restKey"} (PEM). Made once
per render and kept in the root context, since the Secrets and the webhook
configurations (caBundle) are in different files and genCA makes a new CA
at every call. On an upgrade, the Secrets in the cluster are kept when both
exist and carry the same ca.crt (lookup; `helm template` sees no cluster
and always makes new ones).
*/}}
{{- define "userquota.tls" -}}
{{- $root := . -}}
{{- if not (hasKey $root "userquotaTLS") -}}
{{- $ns := .Release.Namespace -}}
{{- $webhook := lookup "v1" "Secret" $ns "userquota-webhook-tls" -}}
{{- $rest := lookup "v1" "Secret" $ns "userquota-scheduler-tls" -}}
{{- $tls := dict -}}
{{- if and $webhook $rest $webhook.data $rest.data
      (index $webhook.data "ca.crt") (index $rest.data "ca.crt")
      (eq (index $webhook.data "ca.crt") (index $rest.data "ca.crt")) -}}
{{- $tls = dict "ca" (index $rest.data "ca.crt" | b64dec)
      "webhookCert" (index $webhook.data "tls.crt" | b64dec) "webhookKey" (index $webhook.data "tls.key" | b64dec)
      "restCert" (index $rest.data "tls.crt" | b64dec) "restKey" (index $rest.data "tls.key" | b64dec) -}}
{{- else -}}
{{- $days := int .Values.tls.selfSigned.validityDays -}}
{{- $ca := genCA "userquota-ca" $days -}}
{{- $webhookHost := include "userquota.webhookHost" . -}}
{{- $restHost := include "userquota.schedulerRESTHost" . -}}
{{- $w := genSignedCert $webhookHost nil (list $webhookHost) $days $ca -}}
{{- $r := genSignedCert $restHost nil (list $restHost) $days $ca -}}
{{- $tls = dict "ca" $ca.Cert "webhookCert" $w.Cert "webhookKey" $w.Key "restCert" $r.Cert "restKey" $r.Key -}}
{{- end -}}
{{- $_ := set $root "userquotaTLS" $tls -}}
{{- end -}}
{{- get $root "userquotaTLS" | toJson -}}
{{- end }}

{{/* The caBundle of the webhook configurations (base64 PEM), "" under cert-manager (its CA injector fills it in). */}}
{{- define "userquota.caBundle" -}}
{{- if eq .Values.tls.mode "selfSigned" -}}
{{- (include "userquota.tls" . | fromJson).ca | b64enc -}}
{{- else if eq .Values.tls.mode "provided" -}}
{{- required "tls.caBundle: the CA (base64 PEM) that signed the Secrets userquota-webhook-tls and userquota-scheduler-tls (tls.mode provided)" .Values.tls.caBundle -}}
{{- end -}}
{{- end }}

{{/*
userquota.checkKubeVersion: API servers from 1.35 on (kube-scheduler v1.35's
version-skew policy; pods/resize, which the webhook checks, is GA in 1.35).
An API server built without version stamps (v0.0.0-master: Kubernetes
from source, as in our integration tests) says nothing of its version and
is let through.
*/}}
{{- define "userquota.checkKubeVersion" -}}
{{- $v := .Capabilities.KubeVersion.Version -}}
{{- if and (not (hasPrefix "v0.0.0-" $v)) (not (semverCompare ">=1.35.0-0" $v)) -}}
{{- fail (printf "Kubernetes %s: userquota-scheduler needs an API server at 1.35 or newer (docs/install.md)" $v) -}}
{{- end -}}
{{- end }}

{{- define "userquota.checkTLSMode" -}}
{{- if not (has .Values.tls.mode (list "selfSigned" "certManager" "provided")) -}}
{{- fail (printf "tls.mode %q: want selfSigned, certManager or provided" .Values.tls.mode) -}}
{{- end -}}
{{- end }}
