package telemetry

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tokperf/tokperf/internal/record"
)

// The NVIDIA DCGM exporter's default counters that make a GPU reading,
// with their units: the same figures nvidia-smi gives locally, for a
// server on another machine.
const (
	DCGMPower  = "DCGM_FI_DEV_POWER_USAGE" // W
	DCGMUtil   = "DCGM_FI_DEV_GPU_UTIL"    // %
	DCGMFBUsed = "DCGM_FI_DEV_FB_USED"     // MiB
	DCGMFBFree = "DCGM_FI_DEV_FB_FREE"     // MiB
	// DCGMFBReserved is held by the driver (newer exporters): part of the
	// total, neither used nor free.
	DCGMFBReserved = "DCGM_FI_DEV_FB_RESERVED"
)

// ParseDCGM reads a DCGM exporter's Prometheus text into one reading per
// GPU (by its gpu label, named by modelName), sorted by index. Other
// metrics are skipped; a GPU series without a gpu label, or a line that is
// not Prometheus text, is an error naming its line.
func ParseDCGM(r io.Reader) ([]record.GPUSample, error) {
	by := map[int]*record.GPUSample{}
	var reserved map[int]float64
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || !strings.HasPrefix(line, "DCGM_FI_DEV_") {
			continue
		}
		name, labels, value, err := splitSeries(line)
		if err != nil {
			return nil, fmt.Errorf("dcgm metrics line %d: %v", n, err)
		}
		if name != DCGMPower && name != DCGMUtil && name != DCGMFBUsed && name != DCGMFBFree && name != DCGMFBReserved {
			continue
		}
		idx, err := strconv.Atoi(labels["gpu"])
		if err != nil || idx < 0 {
			return nil, fmt.Errorf("dcgm metrics line %d: %s: gpu label %q is not a GPU index", n, name, labels["gpu"])
		}
		if math.IsNaN(value) || math.IsInf(value, 0) || value < 0 {
			continue // no reading, not a figure
		}
		g := by[idx]
		if g == nil {
			g = &record.GPUSample{Index: idx}
			by[idx] = g
		}
		if g.Name == "" {
			g.Name = labels["modelName"]
		}
		switch name {
		case DCGMPower:
			g.PowerW = value
		case DCGMUtil:
			g.UtilPct = value
		case DCGMFBUsed:
			g.MemUsedMiB = value
			g.MemTotalMiB += value
		case DCGMFBFree:
			g.MemTotalMiB += value
		case DCGMFBReserved:
			if reserved == nil {
				reserved = map[int]float64{}
			}
			reserved[idx] = value
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	out := make([]record.GPUSample, 0, len(by))
	for i, g := range by {
		g.MemTotalMiB += reserved[i]
		out = append(out, *g)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Index < out[b].Index })
	return out, nil
}

// splitSeries splits `name{k="v",...} value [timestamp]`.
func splitSeries(line string) (string, map[string]string, float64, error) {
	labels := map[string]string{}
	name, rest := line, ""
	if i := strings.IndexAny(line, "{ \t"); i >= 0 {
		name, rest = line[:i], line[i:]
	}
	if strings.HasPrefix(rest, "{") {
		j := 1
		for {
			for j < len(rest) && (rest[j] == ',' || rest[j] == ' ') {
				j++
			}
			if j < len(rest) && rest[j] == '}' {
				rest = rest[j+1:]
				break
			}
			eq := strings.IndexByte(rest[j:], '=')
			if eq < 0 || j+eq+1 >= len(rest) || rest[j+eq+1] != '"' {
				return "", nil, 0, fmt.Errorf("%s: bad label set", name)
			}
			key := strings.TrimSpace(rest[j : j+eq])
			k := j + eq + 2
			var val strings.Builder
			for ; k < len(rest) && rest[k] != '"'; k++ {
				if rest[k] == '\\' && k+1 < len(rest) {
					k++
				}
				val.WriteByte(rest[k])
			}
			if k >= len(rest) {
				return "", nil, 0, fmt.Errorf("%s: unclosed label value", name)
			}
			labels[key] = val.String()
			j = k + 1
		}
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return "", nil, 0, fmt.Errorf("%s: no value", name)
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return "", nil, 0, fmt.Errorf("%s: value %q: %v", name, fields[0], err)
	}
	return name, labels, v, nil
}

// ScrapeDCGM fetches and parses a DCGM exporter's endpoint once.
func ScrapeDCGM(ctx context.Context, client *http.Client, url string) ([]record.GPUSample, error) {
	body, done, err := get(ctx, client, url)
	if err != nil {
		return nil, err
	}
	defer done()
	gpus, err := ParseDCGM(body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", url, err)
	}
	if len(gpus) == 0 {
		return nil, fmt.Errorf("%s: no %s series: not a DCGM exporter's metrics", url, DCGMPower)
	}
	return gpus, nil
}

// WatchDCGM scrapes a DCGM exporter every interval until Stop, stamping
// each reading with clock. The exporter refreshes its gauges on its own
// interval (dcgm-exporter's -c, 30 s by default): run it with -c 1000 or
// less, or a short stage holds one reading. Failed scrapes are skipped.
func WatchDCGM(ctx context.Context, client *http.Client, url string, clock record.Clock, every time.Duration) *GPUWatcher {
	ctx, cancel := context.WithCancel(ctx)
	w := &GPUWatcher{done: make(chan struct{})}
	w.stop = func() {
		cancel()
		<-w.done
	}
	go func() {
		defer close(w.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			if gpus, err := ScrapeDCGM(ctx, client, url); err == nil {
				at := clock.Now()
				for i := range gpus {
					gpus[i].At = at
				}
				w.add(gpus...)
			}
			select {
			case <-t.C:
			case <-ctx.Done():
				return
			}
		}
	}()
	return w
}
