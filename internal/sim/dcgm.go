package sim

import (
	"fmt"
	"net/http"
	"strings"
)

// The simulator's GPUs as an NVIDIA DCGM exporter shows them (its default
// counters: DCGM_FI_DEV_POWER_USAGE in W, DCGM_FI_DEV_GPU_UTIL in %,
// DCGM_FI_DEV_FB_USED and DCGM_FI_DEV_FB_FREE in MiB, one series per GPU
// by its gpu label), served at GET /dcgm/metrics, so a client that reads
// a remote server's GPUs from its exporter can be held to known figures.
const (
	// DCGMFrameBufferMiB is each simulated GPU's memory (an 80 GB card).
	DCGMFrameBufferMiB = 81559
	// dcgmWeightsMiB is what each GPU holds before any KV cache.
	dcgmWeightsMiB = 40000
)

// GPUPowerW is the power simulated GPU i draws, the same at every
// scrape (idle or busy), so the energy over any window is exactly
// power × time: the truth the client's energy per token is checked
// against. GPUs differ by index so a mix-up of series shows.
func (s *Server) GPUPowerW(i int) float64 { return 300 + 20*float64(i) }

// dcgm writes the DCGM exporter's text for the profile's GPUs: power as
// GPUPowerW, utilization the running share of max_running, memory the
// weights plus the KV pool's share in use.
func (s *Server) dcgm(w http.ResponseWriter, r *http.Request) {
	e := s.eng
	util := min(100, 100*float64(e.Running.Load())/float64(s.p.MaxRunning))
	kv := float64(e.KVUsed.Load()) / float64(s.p.KVTokens)
	used := dcgmWeightsMiB + kv*(DCGMFrameBufferMiB-dcgmWeightsMiB-1024)
	name := s.p.GPU
	if name == "" {
		name = "NVIDIA H100 80GB HBM3"
	}
	n := max(s.p.GPUs, 1)
	var b strings.Builder
	series := func(field, typ, help string, v func(i int) float64) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", field, help, field, typ)
		for i := range n {
			fmt.Fprintf(&b, "%s{gpu=\"%d\",UUID=\"GPU-5e1a0000-0000-0000-0000-%012d\",pci_bus_id=\"00000000:%02X:00.0\",device=\"nvidia%d\",modelName=%q,Hostname=\"tokperf-sim\"} %g\n",
				field, i, i, 0x18+i, i, name, v(i))
		}
	}
	series("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", func(int) float64 { return util })
	series("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).", func(int) float64 { return DCGMFrameBufferMiB - used })
	series("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", func(int) float64 { return used })
	series("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", s.GPUPowerW)
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	w.Write([]byte(b.String()))
}
