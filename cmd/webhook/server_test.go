package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/userquota/userquota/pkg/webhook"
)

// TestServerTimeouts: the production server has every timeout and a
// header bound (the body bound is the handler's, pkg/webhook).
func TestServerTimeouts(t *testing.T) {
	srv := newServer(":0", http.NotFoundHandler(), nil, defaultTimeouts)
	for name, d := range map[string]time.Duration{
		"ReadHeaderTimeout": srv.ReadHeaderTimeout, "ReadTimeout": srv.ReadTimeout,
		"WriteTimeout": srv.WriteTimeout, "IdleTimeout": srv.IdleTimeout,
	} {
		if d <= 0 || d > time.Minute {
			t.Errorf("%s = %v, want set and at most a minute", name, d)
		}
	}
	if srv.MaxHeaderBytes <= 0 || srv.MaxHeaderBytes > 1<<20 {
		t.Errorf("MaxHeaderBytes = %d", srv.MaxHeaderBytes)
	}
}

// TestSlowClientsAreCut: a client that sends half its headers, or its
// headers and then trickles the body, or stays idle after an answer, has
// its connection closed by the server once the timeout passes (short
// ones here; the test waits at most 5 s for the close).
func TestSlowClientsAreCut(t *testing.T) {
	short := timeouts{readHeader: 200 * time.Millisecond, read: 300 * time.Millisecond, write: 300 * time.Millisecond, idle: 300 * time.Millisecond}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := newServer(ln.Addr().String(), webhook.NewHandler(webhook.Config{}), nil, short)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	tests := []struct {
		name string
		send string // what the client writes before it stalls
	}{
		{name: "half the headers", send: "POST /mutate HTTP/1.1\r\nHost: x\r\n"},
		{name: "a trickled body", send: "POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"apiVersion\":"},
		{name: "idle after an answer", send: "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := io.WriteString(conn, tc.send); err != nil {
				t.Fatal(err)
			}
			// Read until the server closes; the deadline only keeps a
			// server that never does from hanging the test.
			_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, err = io.Copy(io.Discard, bufio.NewReader(conn))
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("the server kept the connection open for 5 s")
			}
		})
	}
}
