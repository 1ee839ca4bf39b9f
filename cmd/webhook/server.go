package main

import (
	"crypto/tls"
	"net/http"
	"time"
)

// timeouts bound how long one connection may hold the server: the API
// server calls with its own timeout (timeoutSeconds, 5 s in
// manifests/webhook-config.yaml) and reuses connections, so anything
// slower is a client that is not the API server, or a stuck one.
type timeouts struct {
	readHeader, read, write, idle time.Duration
}

// defaultTimeouts: headers within 5 s, the whole request (at most
// webhook.MaxRequestBytes) within 10 s, the answer written within 10 s
// of the request's headers, and an idle kept-alive connection closed
// after 60 s.
var defaultTimeouts = timeouts{readHeader: 5 * time.Second, read: 10 * time.Second, write: 10 * time.Second, idle: 60 * time.Second}

// maxHeaderBytes bounds request headers; the API server sends a few
// hundred bytes.
const maxHeaderBytes = 64 << 10

// newServer is the webhook's HTTPS server: every timeout set, so a client
// that opens connections and sends nothing, or trickles a body, holds a
// connection for seconds, not for ever (the body itself is bounded by the
// handler, webhook.MaxRequestBytes).
func newServer(addr string, h http.Handler, tlsConfig *tls.Config, t timeouts) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           h,
		TLSConfig:         tlsConfig,
		ReadHeaderTimeout: t.readHeader,
		ReadTimeout:       t.read,
		WriteTimeout:      t.write,
		IdleTimeout:       t.idle,
		MaxHeaderBytes:    maxHeaderBytes,
	}
}
