package backend

import (
	"context"
	"net/http"

	"github.com/tokperf/tokperf/internal/record"
)

// ModelSize is the served model's size where the server states it:
// llama-server lists each model in /v1/models with meta.n_params (its
// parameters) and meta.size (its weights' bytes), from which the bytes a
// weight takes follow. vLLM, SGLang, TGI and Ollama state no parameter
// count there, so nil for them, and nil for any answer that does not hold
// both as positive numbers.
func ModelSize(ctx context.Context, client *http.Client, base, apiKey, model string) *record.Hardware {
	u, err := routeURL(base, "/v1/models")
	if err != nil {
		return nil
	}
	var models struct {
		Data []struct {
			ID   string `json:"id"`
			Meta struct {
				Params float64 `json:"n_params"`
				Size   float64 `json:"size"`
			} `json:"meta"`
		} `json:"data"`
	}
	pctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	if code, err := getJSON(pctx, client, u.String(), apiKey, &models); err != nil || code != http.StatusOK {
		return nil
	}
	for _, d := range models.Data {
		if m := d.Meta; (d.ID == model || len(models.Data) == 1) && m.Params > 0 && m.Size > 0 {
			return &record.Hardware{ParamsB: m.Params / 1e9, BytesPerParam: m.Size / m.Params, From: "the server's /v1/models meta"}
		}
	}
	return nil
}
