//go:build k8s

package k8s

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/api/validate/content"
)

// names are inputs on both sides of the rules for names and labels.
var names = []string{"tokperf", "bench-1", "a", "0", "a-", "-a", "A", "a.b", "a_b", "a..b", "kubernetes.io/hostname",
	"node.kubernetes.io/instance-type", "x/y/z", "/x", "x/", "Ab_c.d-E", "é", "a b", strings.Repeat("a", 63), strings.Repeat("a", 64),
	strings.Repeat("a", 250) + ".io/x", "", "ok.", ".ok", "pool", "load-gen"}

// The name rules agree with the API server's (k8s.io/apimachinery).
func TestNamesAsTheAPIServer(t *testing.T) {
	t.Parallel()
	for _, s := range names {
		if mine, theirs := checkLabelName("x", s) == nil, len(content.IsDNS1123Label(s)) == 0; mine != theirs {
			t.Errorf("DNS label %q: tokperf %v, apimachinery %v", s, mine, theirs)
		}
		if mine, theirs := checkSubdomain("x", s) == nil, len(content.IsDNS1123Subdomain(s)) == 0; mine != theirs {
			t.Errorf("DNS subdomain %q: tokperf %v, apimachinery %v", s, mine, theirs)
		}
		if mine, theirs := (Label{s, "v"}).check() == nil, len(content.IsLabelKey(s)) == 0; mine != theirs {
			t.Errorf("label key %q: tokperf %v, apimachinery %v", s, mine, theirs)
		}
		if mine, theirs := (Label{"k", s}).check() == nil, len(content.IsLabelValue(s)) == 0; mine != theirs {
			t.Errorf("label value %q: tokperf %v, apimachinery %v", s, mine, theirs)
		}
	}
}

// Every quantity tokperf accepts is one the API server parses, as the
// same positive amount.
func TestQuantitiesAsTheAPIServer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		q  string
		ok bool
	}{
		{"2", true}, {"500m", true}, {"1.5", true}, {"4Gi", true}, {"512M", true}, {"1e3", true}, {"+2", true}, {".5", true},
		{"0", false}, {"0.0m", false}, {"-1", false}, {"2 cores", false}, {"4GB", false}, {"", false}, {"1.5.2", false}, {"Gi", false},
	} {
		err := checkQuantity("--cpu", tc.q)
		if (err == nil) != tc.ok {
			t.Errorf("%q: accepted %v, want %v (%v)", tc.q, err == nil, tc.ok, err)
		}
		if err == nil {
			if q, perr := resource.ParseQuantity(tc.q); perr != nil || q.Sign() <= 0 {
				t.Errorf("%q: tokperf accepts it, apimachinery: %v, sign %d", tc.q, perr, q.Sign())
			}
		}
	}
}

// A quantity tokperf accepts is never one the API server refuses.
func FuzzQuantity(f *testing.F) {
	for _, s := range []string{"2", "500m", "1.5", "4Gi", "1e3", "0.1", "+.5E2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if checkQuantity("--cpu", s) != nil {
			return
		}
		if q, err := resource.ParseQuantity(s); err != nil || q.Sign() <= 0 {
			t.Errorf("%q: tokperf accepts it, apimachinery: %v, sign %d", s, err, q.Sign())
		}
	})
}

// A label tokperf accepts is one the API server accepts.
func FuzzLabel(f *testing.F) {
	for _, s := range names {
		f.Add(s, "v")
	}
	f.Fuzz(func(t *testing.T, k, v string) {
		if (Label{k, v}).check() != nil {
			return
		}
		if errs := append(content.IsLabelKey(k), content.IsLabelValue(v)...); len(errs) > 0 {
			t.Errorf("%q=%q: tokperf accepts it, apimachinery: %v", k, v, errs)
		}
	})
}
