package backend

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
)

// Routes reads the generation routes an OpenAPI document lists, at
// /openapi.json (FastAPI: vLLM, SGLang) or /api-doc/openapi.json (TGI);
// a server with neither is unknown (nil), not a server without routes.
func TestRoutes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, path, doc string
		want            []string
	}{
		{"fastapi", "/openapi.json", `{"paths":{"/v1/responses":{},"/v1/chat/completions":{},"/tokenize":{}}}`, []string{"chat", "responses"}},
		{"tgi", "/api-doc/openapi.json", `{"paths":{"/v1/messages":{},"/generate":{}}}`, []string{"messages"}},
		{"none of them", "/openapi.json", `{"paths":{"/health":{}}}`, []string{}},
		{"no document", "/elsewhere", `{}`, nil},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != tc.path {
				http.NotFound(w, r)
				return
			}
			w.Write([]byte(tc.doc))
		}))
		got := Routes(t.Context(), srv.Client(), srv.URL, "")
		srv.Close()
		if !slices.Equal(got, tc.want) || (got == nil) != (tc.want == nil) {
			t.Errorf("%s: %#v, want %#v", tc.name, got, tc.want)
		}
	}
}
