package k8s

// The part of batch/v1 Job that tokperf writes, field names and nesting
// as in k8s.io/api (the round-trip test decodes the manifest into those
// types strictly, so a misspelt or misplaced field fails it).

type manifest struct {
	APIVersion string  `json:"apiVersion"`
	Kind       string  `json:"kind"`
	Metadata   meta    `json:"metadata"`
	Spec       jobSpec `json:"spec"`
}

type meta struct {
	Name      string            `json:"name,omitempty"`
	Namespace string            `json:"namespace,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
}

type jobSpec struct {
	CompletionMode string      `json:"completionMode"`
	Completions    int         `json:"completions"`
	Parallelism    int         `json:"parallelism"`
	BackoffLimit   int         `json:"backoffLimit"`
	Template       podTemplate `json:"template"`
}

type podTemplate struct {
	Metadata meta    `json:"metadata"`
	Spec     podSpec `json:"spec"`
}

type podSpec struct {
	RestartPolicy string            `json:"restartPolicy"`
	NodeSelector  map[string]string `json:"nodeSelector,omitempty"`
	Affinity      affinity          `json:"affinity"`
	Containers    []container       `json:"containers"`
	Volumes       []volume          `json:"volumes,omitempty"`
}

type affinity struct {
	PodAntiAffinity antiAffinity `json:"podAntiAffinity"`
}

type antiAffinity struct {
	Required  []podAffinityTerm      `json:"requiredDuringSchedulingIgnoredDuringExecution,omitempty"`
	Preferred []weightedAffinityTerm `json:"preferredDuringSchedulingIgnoredDuringExecution,omitempty"`
}

type podAffinityTerm struct {
	LabelSelector labelSelector `json:"labelSelector"`
	TopologyKey   string        `json:"topologyKey"`
}

type weightedAffinityTerm struct {
	Weight int             `json:"weight"`
	Term   podAffinityTerm `json:"podAffinityTerm"`
}

type labelSelector struct {
	MatchLabels map[string]string `json:"matchLabels"`
}

type container struct {
	Name         string        `json:"name"`
	Image        string        `json:"image"`
	Command      []string      `json:"command"`
	Args         []string      `json:"args"`
	Env          []envVar      `json:"env"`
	Resources    resources     `json:"resources"`
	VolumeMounts []volumeMount `json:"volumeMounts,omitempty"`
}

type envVar struct {
	Name      string    `json:"name"`
	ValueFrom envSource `json:"valueFrom"`
}

type envSource struct {
	FieldRef     *fieldRef     `json:"fieldRef,omitempty"`
	SecretKeyRef *secretKeyRef `json:"secretKeyRef,omitempty"`
}

type fieldRef struct {
	FieldPath string `json:"fieldPath"`
}

type secretKeyRef struct {
	Name string `json:"name"`
	Key  string `json:"key"`
}

type resources struct {
	Requests map[string]string `json:"requests"`
	Limits   map[string]string `json:"limits"`
}

type volumeMount struct {
	Name      string `json:"name"`
	MountPath string `json:"mountPath"`
}

type volume struct {
	Name                  string   `json:"name"`
	PersistentVolumeClaim claimRef `json:"persistentVolumeClaim"`
}

type claimRef struct {
	ClaimName string `json:"claimName"`
}

// manifest is the Job: Indexed, one pod per shard, all at once, none
// retried, no two on one node.
func (j Job) manifest() manifest {
	labels := j.labels()
	// A retried shard would run its share of the load again, late and
	// alone, and skew the merged figures: a failed shard fails the run.
	spec := jobSpec{CompletionMode: "Indexed", Completions: j.Shards, Parallelism: j.Shards, BackoffLimit: 0,
		Template: podTemplate{Metadata: meta{Labels: labels}, Spec: j.podSpec()}}
	return manifest{APIVersion: "batch/v1", Kind: "Job", Metadata: meta{Name: j.Name, Namespace: j.Namespace, Labels: labels}, Spec: spec}
}

func (j Job) podSpec() podSpec {
	term := podAffinityTerm{LabelSelector: labelSelector{MatchLabels: j.labels()}, TopologyKey: hostnameKey}
	var anti antiAffinity
	if j.Preferred {
		anti.Preferred = []weightedAffinityTerm{{Weight: 100, Term: term}}
	} else {
		anti.Required = []podAffinityTerm{term}
	}
	// The Job controller adds JOB_COMPLETION_INDEX itself (unless the
	// container has it); set here from the annotation every Kubernetes
	// since 1.21 writes, $(JOB_COMPLETION_INDEX) in args is sure to expand.
	env := []envVar{{Name: IndexVar, ValueFrom: envSource{FieldRef: &fieldRef{FieldPath: indexField}}}}
	if j.APIKeySecret != "" {
		env = append(env, envVar{Name: "OPENAI_API_KEY", ValueFrom: envSource{SecretKeyRef: &secretKeyRef{Name: j.APIKeySecret, Key: j.APIKeyKey}}})
	}
	for i, s := range j.secrets() {
		env = append(env, envVar{Name: secretVar(i + 1), ValueFrom: envSource{SecretKeyRef: &secretKeyRef{Name: j.secretName(), Key: s.key}}})
	}
	// Requests equal to limits: guaranteed QoS, so the load generator has
	// its CPUs (and, with whole CPUs and the static CPU manager, its own cores).
	res := map[string]string{"cpu": j.CPU, "memory": j.Memory}
	c := container{Name: "tokperf", Image: j.Image, Command: []string{j.Command}, Args: j.Args(), Env: env,
		Resources: resources{Requests: res, Limits: res}}
	p := podSpec{RestartPolicy: "Never", Affinity: affinity{PodAntiAffinity: anti}}
	if len(j.NodeSelector) > 0 {
		p.NodeSelector = map[string]string{}
		for _, l := range j.NodeSelector {
			p.NodeSelector[l.Key] = l.Value
		}
	}
	if j.Claim != "" {
		c.VolumeMounts = []volumeMount{{Name: "results", MountPath: MountPath}}
		p.Volumes = []volume{{Name: "results", PersistentVolumeClaim: claimRef{ClaimName: j.Claim}}}
	}
	p.Containers = []container{c}
	return p
}
