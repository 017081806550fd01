package summary

import (
	"runtime"
	"testing"
	"time"

	"github.com/tokperf/tokperf/internal/record"
)

// BenchmarkAccMemory measures what a stage keeps per request and per
// chunk: the heap after folding b.N requests of 256 one-token chunks,
// less the heap before, per request and per chunk.
func BenchmarkAccMemory(b *testing.B) {
	const chunks = 256
	rec := record.New(0)
	rec.Status, rec.OutputSource, rec.ChunkSource = record.StatusOK, record.SourceUsage, record.SourceContinuous
	rec.Sent, rec.FirstByte = time.Millisecond, 2*time.Millisecond
	for i := range chunks {
		rec.AddChunk(3*time.Millisecond+time.Duration(i)*(10*time.Millisecond+time.Duration(i%7)*time.Microsecond), 1)
	}
	rec.Done, rec.OutputTokens = rec.LastToken+time.Millisecond, chunks
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	a := NewAcc(64, record.SLO{})
	for i := 0; b.Loop(); i++ {
		rec.ID = i
		a.Add(&rec)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	grown := float64(after.HeapAlloc) - float64(before.HeapAlloc)
	b.ReportMetric(grown/float64(b.N), "B/request")
	b.ReportMetric(grown/float64(b.N*chunks), "B/chunk")
	runtime.KeepAlive(a)
}
