package backend

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tokperf/tokperf/internal/infile"
)

// The HTTP clients detection, readiness and the generation transports use:
// TLS roots, the pooled net/http client, HTTP/2 cleartext, and the
// redirect rule that keeps credentials home.

// TLSConfig is the TLS of https:// targets: caFile, when given, a PEM
// bundle of the roots to trust instead of the system's; insecure skips
// verification (a self-signed test server).
func TLSConfig(caFile string, insecure bool) (*tls.Config, error) {
	if caFile == "" && !insecure {
		return nil, nil
	}
	c := &tls.Config{InsecureSkipVerify: insecure}
	if caFile != "" {
		pem, err := infile.ReadAll(context.Background(), caFile, infile.Small)
		if err != nil {
			return nil, fmt.Errorf("--ca-cert: %w", err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--ca-cert %s: no PEM certificate in it", caFile)
		}
	}
	return c, nil
}

// NewClient is an HTTP client fit for measuring: no proxy, no compression,
// a pool as large as the concurrency, and no overall timeout (which would
// cut streams; deadlines are per request, through the context).
func NewClient(conns int, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *http.Client {
	if conns < 1 {
		conns = 1
	}
	t := &http.Transport{
		Proxy:                 nil,
		DisableCompression:    true,
		MaxIdleConns:          conns + 16,
		MaxIdleConnsPerHost:   conns + 16,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: 0,
		ForceAttemptHTTP2:     false,
		// A request's headers fit in 1 KB and a long body bypasses the
		// buffer; a response's chunk headers and SSE events are read
		// through 1 KB (longer events bypass it too). Thousands of
		// streams with 4 KB buffers each would not fit 60 MB.
		WriteBufferSize: 1 << 10,
		ReadBufferSize:  1 << 10,
	}
	if dial == nil {
		dial = Dial
	}
	// One stream per connection: each can carry the kernel's arrival time
	// of what it reads.
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return withStamps(c), nil
	}
	return &http.Client{Transport: t, CheckRedirect: SameOrigin}
}

// SameOrigin follows a redirect only within the origin (scheme, host and
// port) of the first request: the API key and the user's headers, which
// every request carries, are never sent to another host or port.
// Detection and readiness probes use it; generation follows none.
func SameOrigin(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	from := via[0].URL
	if origin(req.URL) != origin(from) {
		return fmt.Errorf("redirects to another origin (%s): not followed, so that the API key and --header values are never sent there; give that URL as --url if it is the server", Redact(req.URL.String()))
	}
	return nil
}

// origin is scheme://host:port with the scheme's default port filled in.
func origin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return u.Scheme + "://" + strings.ToLower(u.Hostname()) + ":" + port
}

// NewH2Client speaks cleartext HTTP/2 with prior knowledge (h2c), as
// servers on http:// URLs that offer HTTP/2 expect: many streams share a
// few connections.
func NewH2Client(dial func(ctx context.Context, network, addr string) (net.Conn, error)) *http.Client {
	if dial == nil {
		dial = Dial
	}
	// HTTP/2 with prior knowledge over plain TCP (h2c), as net/http
	// speaks it since Go 1.24: no TLS, no upgrade.
	var h2c http.Protocols
	h2c.SetUnencryptedHTTP2(true)
	return &http.Client{CheckRedirect: SameOrigin, Transport: &http.Transport{
		Protocols:          &h2c,
		DisableCompression: true,
		DialContext:        dial,
		ForceAttemptHTTP2:  true,
	}}
}
