{{/*
Names. Every name includes the release name (one release per MySQL server), truncated to 63 characters.
*/}}
{{- define "dbuser-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "dbuser-operator.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "dbuser-operator.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "dbuser-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "dbuser-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "dbuser-operator.labels" -}}
helm.sh/chart: {{ include "dbuser-operator.chart" . }}
{{ include "dbuser-operator.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: dbuser-operator
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "dbuser-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "dbuser-operator.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "dbuser-operator.adminSecretName" -}}
{{- default (printf "%s-mysql-admin" (include "dbuser-operator.fullname" .)) .Values.mysql.adminSecret.name }}
{{- end }}

{{- define "dbuser-operator.leaseName" -}}
{{- default (include "dbuser-operator.fullname" .) .Values.leaderElection.leaseName }}
{{- end }}

{{/* "true" when leader election is on: as configured, or (null) when there is more than one replica. */}}
{{- define "dbuser-operator.leaderElect" -}}
{{- if kindIs "bool" .Values.leaderElection.enabled }}
{{- .Values.leaderElection.enabled }}
{{- else }}
{{- gt (int .Values.replicaCount) 1 }}
{{- end }}
{{- end }}

{{- define "dbuser-operator.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/*
What the operator does with the Kubernetes API, and nothing more (a test runs the operator with exactly
these rules): DatabaseUsers, DatabaseRoles and MySQLServers (read; finalizers and status by patch), Secrets
(list and watch: the passwords come from the cache; get, create, patch and delete: the generated-password
and connection Secrets it owns), Events (record); with certManager.enabled, cert-manager's Certificates (the
ones it makes for spec.tls.certificate: read, create, patch, delete) and CertificateRequests (list: the reason
of a pending one). cert-manager's Secrets are read with the Secret rule above.
*/}}
{{- define "dbuser-operator.rules" -}}
- apiGroups: ["mysql.dbuser-operator.dev"]
  resources: ["databaseusers"]
  verbs: ["get", "list", "watch", "patch"]
- apiGroups: ["mysql.dbuser-operator.dev"]
  resources: ["databaseusers/status"]
  verbs: ["patch"]
- apiGroups: ["mysql.dbuser-operator.dev"]
  resources: ["databaseroles"]
  verbs: ["get", "list", "watch", "patch"]
- apiGroups: ["mysql.dbuser-operator.dev"]
  resources: ["databaseroles/status"]
  verbs: ["patch"]
- apiGroups: ["mysql.dbuser-operator.dev"]
  resources: ["databases"]
  verbs: ["get", "list", "watch", "patch"]
- apiGroups: ["mysql.dbuser-operator.dev"]
  resources: ["databases/status"]
  verbs: ["patch"]
- apiGroups: ["mysql.dbuser-operator.dev"]
  resources: ["mysqlservers"]
  verbs: ["get", "list", "watch", "patch"]
- apiGroups: ["mysql.dbuser-operator.dev"]
  resources: ["mysqlservers/status"]
  verbs: ["patch"]
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["list", "watch", "get", "create", "patch", "delete"]
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "patch"]
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["list"]
- apiGroups: ["apps"]
  resources: ["deployments", "statefulsets"]
  verbs: ["patch"]
{{- if .Values.certManager.enabled }}
- apiGroups: ["cert-manager.io"]
  resources: ["certificates"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: ["cert-manager.io"]
  resources: ["certificaterequests"]
  verbs: ["list"]
{{- end }}
{{- if .Values.workloadIdentity.signingCA.secretName }}
- apiGroups: ["certificates.k8s.io"]
  resources: ["podcertificaterequests"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["certificates.k8s.io"]
  resources: ["podcertificaterequests/status"]
  verbs: ["update"]
- apiGroups: [""]
  resources: ["pods", "serviceaccounts"]
  verbs: ["get"]
{{- end }}
{{- end }}

{{/*
What the operator reads of cluster-scoped resources, whatever namespaces it watches: Namespaces (get, list,
watch: the labels the servers' spec.policy selects namespaces by) and ClusterMySQLServers (read; finalizers
and status by patch).
*/}}
{{- define "dbuser-operator.clusterRules" -}}
- apiGroups: [""]
  resources: ["namespaces"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["mysql.dbuser-operator.dev"]
  resources: ["clustermysqlservers"]
  verbs: ["get", "list", "watch", "patch"]
- apiGroups: ["mysql.dbuser-operator.dev"]
  resources: ["clustermysqlservers/status"]
  verbs: ["patch"]
{{- if .Values.workloadIdentity.signingCA.secretName }}
- apiGroups: ["certificates.k8s.io"]
  resources: ["signers"]
  resourceNames: ["mysql.dbuser-operator.dev/client"]
  verbs: ["sign"]
{{- end }}
{{- end }}

{{/* Where the Secrets of ClusterMySQLServers are (`--cluster-resource-namespace`): the release namespace. */}}
{{- define "dbuser-operator.clusterResourceNamespace" -}}
{{- default .Release.Namespace .Values.clusterResourceNamespace }}
{{- end }}

{{/* Mount points of the Secrets (the password file path is part of the operator's documented contract). */}}
{{- define "dbuser-operator.adminSecretDir" -}}/var/run/secrets/dbuser-operator/mysql{{- end }}
{{- define "dbuser-operator.tlsSecretDir" -}}/var/run/secrets/dbuser-operator/mysql-tls{{- end }}
{{- define "dbuser-operator.workloadCADir" -}}/var/run/secrets/dbuser-operator/workload-ca{{- end }}

{{/* The TLS mode in force: mysql.tls.mode, else what the other TLS values meant before modes existed. */}}
{{- define "dbuser-operator.tlsMode" -}}
{{- $tls := .Values.mysql.tls }}
{{- $files := and $tls.secretName (or $tls.caKey $tls.certKey) }}
{{- $tls.mode | default (ternary "VERIFY_IDENTITY" "PREFERRED" (or (not (empty $files)) $tls.required)) }}
{{- end }}

{{/* The operator's command line (`dbuser-operator --help`), as a YAML list: every setting explicit. */}}
{{- define "dbuser-operator.args" -}}
{{- $tls := .Values.mysql.tls }}
{{- $args := list (printf "--target=%s" .Values.target) (printf "--target-label=%s" .Values.targetLabel) }}
{{- with .Values.watchNamespaces }}
{{- $args = append $args (printf "--namespaces=%s" (join "," .)) }}
{{- end }}
{{- with .Values.clusterResourceNamespace }}
{{- $args = append $args (printf "--cluster-resource-namespace=%s" .) }}
{{- end }}
{{- $args = append $args (printf "--server-check-period=%v" .Values.serverCheckPeriod) }}
{{- $args = append $args (ternary "--default-server" "--no-default-server" .Values.defaultServer) }}
{{- $args = append $args (printf "--mysql-host=%s" .Values.mysql.host) }}
{{- $args = append $args (printf "--mysql-port=%d" (int .Values.mysql.port)) }}
{{- $args = append $args (printf "--mysql-user=%s" .Values.mysql.user) }}
{{- with .Values.connection.host }}
{{- $args = append $args (printf "--connection-host=%s" .) }}
{{- end }}
{{- with .Values.connection.port }}
{{- $args = append $args (printf "--connection-port=%d" (int .)) }}
{{- end }}
{{- with .Values.connection.sslMode }}
{{- $args = append $args (printf "--connection-ssl-mode=%s" .) }}
{{- end }}
{{- with .Values.connection.endpoints }}
{{- $args = append $args (printf "--connection-endpoints=%s" (toJson .)) }}
{{- end }}
{{- if .Values.defaultServer }}
{{- $args = append $args (printf "--mysql-password-file=%s/%s" (include "dbuser-operator.adminSecretDir" .) .Values.mysql.adminSecret.key) }}
{{- end }}
{{- $args = append $args (printf "--mysql-connect-timeout=%v" .Values.mysql.connectTimeout) }}
{{- if and .Values.defaultServer $tls.secretName $tls.caKey }}
{{- $args = append $args (printf "--mysql-tls-ca=%s/%s" (include "dbuser-operator.tlsSecretDir" .) $tls.caKey) }}
{{- end }}
{{- if and .Values.defaultServer $tls.secretName $tls.certKey }}
{{- $args = append $args (printf "--mysql-tls-cert=%s/%s" (include "dbuser-operator.tlsSecretDir" .) $tls.certKey) }}
{{- $args = append $args (printf "--mysql-tls-key=%s/%s" (include "dbuser-operator.tlsSecretDir" .) $tls.keyKey) }}
{{- end }}
{{- with $tls.mode }}
{{- $args = append $args (printf "--mysql-ssl-mode=%s" .) }}
{{- end }}
{{- with $tls.serverName }}
{{- $args = append $args (printf "--mysql-tls-server-name=%s" .) }}
{{- end }}
{{- $args = append $args (ternary "--mysql-tls-required" "--no-mysql-tls-required" $tls.required) }}
{{- with .Values.workloadIdentity.signingCA.secretName }}
{{- $args = append $args (printf "--workload-signing-ca=%s" (include "dbuser-operator.workloadCADir" $)) }}
{{- end }}
{{- $args = append $args (printf "--workload-certificate-max-lifetime=%v" .Values.workloadIdentity.certificateMaxLifetime) }}
{{- $args = append $args (printf "--workload-binding-grace=%v" .Values.workloadIdentity.bindingGrace) }}
{{- $args = append $args (printf "--ownership-schema=%s" .Values.ownershipSchema) }}
{{- with .Values.reservedUsers }}
{{- $args = append $args (printf "--reserved-users=%s" (join "," .)) }}
{{- end }}
{{- $args = append $args (printf "--allowed-global-privileges=%s" (join "," .Values.allowedGlobalPrivileges)) }}
{{- if .Values.certManager.enabled }}
{{- $args = append $args "--cert-manager" }}
{{- end }}
{{- with .Values.certManager.clusterIssuers }}
{{- $args = append $args (printf "--cert-manager-cluster-issuers=%s" (join "," .)) }}
{{- end }}
{{- $args = append $args (printf "--resync-period=%v" .Values.resyncPeriod) }}
{{- $args = append $args (printf "--max-concurrent-reconciles=%d" (int .Values.maxConcurrentReconciles)) }}
{{- $args = append $args (printf "--shutdown-timeout=%v" .Values.shutdownTimeout) }}
{{- $args = append $args "--metrics-bind-address=0.0.0.0:8080" }}
{{- $args = append $args "--health-probe-bind-address=0.0.0.0:8081" }}
{{- if eq (include "dbuser-operator.leaderElect" .) "true" }}
{{- $args = append $args "--leader-elect" }}
{{- $args = append $args (printf "--leader-election-id=%s" (include "dbuser-operator.leaseName" .)) }}
{{- else }}
{{- $args = append $args "--no-leader-elect" }}
{{- end }}
{{- $args = append $args (printf "--log-format=%s" .Values.logFormat) }}
{{- $args = append $args (printf "--log-level=%s" .Values.logLevel) }}
{{- $args = concat $args .Values.extraArgs }}
{{- toYaml $args }}
{{- end }}
