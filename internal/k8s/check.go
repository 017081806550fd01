package k8s

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// The Kubernetes API's rules for names, labels and quantities (as
// k8s.io/apimachinery's validation has them; the tests compare the two), so
// that a manifest tokperf writes is one the API server accepts. Each is
// compiled on first use: every other command starts without them.
var (
	dns1123Label = lazyRegexp(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	labelName    = lazyRegexp(`^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`)
	configKey    = lazyRegexp(`^[-._a-zA-Z0-9]{1,253}$`)
	quantity     = lazyRegexp(`^\+?([0-9]+(\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E|[eE][0-9]{1,2})?$`)
	runID        = lazyRegexp(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)
)

// lazyRegexp is expr, compiled the first time it is called for.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

func checkShards(n int) error {
	if n < 1 || n > maxShards {
		return fmt.Errorf("--shards %d: want 1 to %d processes, each on its own node", n, maxShards)
	}
	return nil
}

func checkBench(args []string) error {
	if len(args) == 0 || (args[0] != "run" && args[0] != "sweep") {
		return fmt.Errorf("give the benchmark after --, run or sweep with its flags and the total load: -- sweep --url http://vllm:8000 -c 64,256")
	}
	for _, a := range args {
		if !utf8.ValidString(a) {
			return fmt.Errorf("after --: %q is not UTF-8 text, which a manifest cannot carry", a)
		}
	}
	return nil
}

// checkName checks a Job's name: the controller names the pods' hosts
// NAME-INDEX, which must be a DNS label.
func checkName(flag, name string, shards int) error {
	if err := checkLabelName(flag, name); err != nil {
		return err
	}
	if host := name + "-" + strconv.Itoa(shards-1); len(host) > 63 {
		return fmt.Errorf("%s %q: too long for %d shards (the pods' hostnames, such as %s, must be at most 63 characters)", flag, name, shards, host)
	}
	return nil
}

// checkLabelName checks a DNS-1123 label: lower-case letters, digits and -.
func checkLabelName(flag, s string) error {
	if len(s) > 63 || !dns1123Label().MatchString(s) {
		return fmt.Errorf("%s %q: want at most 63 lower-case letters, digits and -, starting and ending with a letter or digit", flag, s)
	}
	return nil
}

// checkSubdomain checks a DNS-1123 subdomain: labels joined by dots.
func checkSubdomain(flag, s string) error {
	if len(s) > 253 {
		return fmt.Errorf("%s %q: longer than 253 characters", flag, s)
	}
	for _, part := range strings.Split(s, ".") {
		if !dns1123Label().MatchString(part) {
			return fmt.Errorf("%s %q: want lower-case letters, digits, - and ., starting and ending with a letter or digit", flag, s)
		}
	}
	return nil
}

func checkRunID(id string) error {
	if !runID().MatchString(id) {
		return fmt.Errorf("--run-id %q: want at most 63 letters, digits, ., _ and -, starting with a letter or digit", id)
	}
	return nil
}

// check checks a node selector's key (a qualified name: an optional DNS
// subdomain and /, then a name) and value.
func (l Label) check() error {
	name := l.Key
	if prefix, rest, ok := strings.Cut(l.Key, "/"); ok {
		if err := checkSubdomain("--node-selector", prefix); err != nil {
			return fmt.Errorf("--node-selector %s=%s: the key's prefix %q: want a DNS subdomain, e.g. node.kubernetes.io", l.Key, l.Value, prefix)
		}
		name = rest
	}
	if len(name) > 63 || !labelName().MatchString(name) {
		return fmt.Errorf("--node-selector %s=%s: the key's name %q: want at most 63 letters, digits, -, _ and ., starting and ending with a letter or digit", l.Key, l.Value, name)
	}
	if l.Value != "" && (len(l.Value) > 63 || !labelName().MatchString(l.Value)) {
		return fmt.Errorf("--node-selector %s=%s: the value: want at most 63 letters, digits, -, _ and ., starting and ending with a letter or digit", l.Key, l.Value)
	}
	return nil
}

// checkQuantity checks a resource quantity: 2, 500m, 1.5, 4Gi, 512M.
func checkQuantity(flag, q string) error {
	if m := quantity().FindStringSubmatch(q); m == nil || strings.Trim(m[1], "0.") == "" {
		return fmt.Errorf("%s %q: want a positive quantity, e.g. 2, 500m (CPUs) or 4Gi (memory)", flag, q)
	}
	return nil
}
