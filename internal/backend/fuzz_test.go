package backend

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// FuzzH1Head: whatever a server sends, reading the response head and then
// its body never panics, and a head that is accepted is one the client can
// frame: a three-digit code, chunked or a length or to the connection's
// end.
func FuzzH1Head(f *testing.F) {
	for _, name := range []string{"llama-chat-stream-headers.txt", "ollama-chat-stream-headers.txt", "llama-chat-nonstream.txt", "ollama-chat-nonstream.txt"} {
		b, err := readCapture(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(response(2))
	for _, s := range []string{
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
		"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nhi",
		"HTTP/1.1 204 No Content\r\n\r\n",
		"HTTP/1.1 302 Found\r\nLocation: /x\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n3;x=y\r\nabc\r\n0\r\nT: 1\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<html>",
		"HTTP/1.1 200\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		c := testConn(bytes.NewReader(in))
		h, err := c.head()
		if err != nil {
			return
		}
		switch {
		case h.code < 100 || h.code > 999:
			t.Fatalf("code %d accepted", h.code)
		case h.length < -1:
			t.Fatalf("length %d", h.length)
		case h.chunked && h.length != -1:
			t.Fatalf("chunked with a length %d", h.length)
		case !h.chunked && h.length < 0 && !h.close:
			t.Fatal("a body to the connection's end on a connection kept alive")
		}
		b := newH1Body(c, h)
		n, _ := io.Copy(io.Discard, io.LimitReader(b, 1<<20))
		if b.Done() && !h.chunked && h.length >= 0 && n != h.length {
			t.Fatalf("read %d bytes of a %d-byte body", n, h.length)
		}
	})
}

// FuzzDetectAnswers: any body on any identity route or /v1/models is
// matched without a panic, and a match names its engine and keeps only
// scalar fields for the result header.
func FuzzDetectAnswers(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "identity", "*.json"))
	if len(files) == 0 {
		f.Fatal("no seeds in testdata/identity")
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"version":1}`))
	f.Add([]byte(`{"model_path":null,"tp_size":{"a":[1]},"version":["x"]}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, in []byte) {
		var body map[string]any
		json.Unmarshal(in, &body)
		for _, p := range probes {
			s, ok := p.identify(body)
			if !ok {
				continue
			}
			if s.Engine != p.engine {
				t.Fatalf("%s matched as %q", p.Path, s.Engine)
			}
			for k, v := range s.Info {
				switch v.(type) {
				case string, float64, bool, nil:
				default:
					t.Fatalf("%s: info %q is a %T", p.Path, k, v)
				}
			}
		}
	})
}
