package rest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/klog/v2"
)

// ServeOptions configure Serve.
type ServeOptions struct {
	// Address is the listen address, "host:port".
	Address string
	Handler http.Handler
	// TLS serves HTTPS when set (see TLSConfig); nil serves plain HTTP.
	TLS *tls.Config
	// RetryInterval is how long to wait before trying to listen again after
	// a failure (default 5s).
	RetryInterval time.Duration
	// OnListen, if set, is called with the bound address (tests bind port 0).
	OnListen func(net.Addr)
}

// shutdownTimeout bounds how long in-flight requests may finish at exit.
const shutdownTimeout = 5 * time.Second

// Serve serves o.Handler on o.Address in the background until ctx ends,
// and returns a channel closed once it has stopped. The usage API only
// observes: if the address cannot be bound (a port still held by a previous
// process), scheduling goes on, the error is logged and listening is
// retried every RetryInterval.
func Serve(ctx context.Context, o ServeOptions) <-chan struct{} {
	logger := klog.FromContext(ctx)
	if o.RetryInterval <= 0 {
		o.RetryInterval = 5 * time.Second
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var ln net.Listener
		for {
			var err error
			ln, err = net.Listen("tcp", o.Address)
			if err == nil {
				break
			}
			logger.Error(err, "The usage REST API cannot listen; retrying", "address", o.Address, "retryIn", o.RetryInterval)
			select {
			case <-ctx.Done():
				return
			case <-time.After(o.RetryInterval):
			}
		}
		scheme := "http"
		if o.TLS != nil {
			scheme = "https"
			ln = tls.NewListener(ln, o.TLS)
		}
		if o.OnListen != nil {
			o.OnListen(ln.Addr())
		}
		srv := &http.Server{
			Handler:           o.Handler,
			ReadHeaderTimeout: 10 * time.Second,
			ReadTimeout:       30 * time.Second,
			WriteTimeout:      60 * time.Second,
			IdleTimeout:       2 * time.Minute,
			MaxHeaderBytes:    1 << 20,
			BaseContext:       func(net.Listener) context.Context { return ctx },
		}
		stopped := make(chan struct{})
		go func() {
			defer close(stopped)
			<-ctx.Done()
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
			defer cancel()
			_ = srv.Shutdown(sctx)
		}()
		logger.Info("Serving the usage REST API", "address", ln.Addr().String(), "scheme", scheme)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error(err, "The usage REST API stopped", "address", o.Address)
		}
		<-stopped
	}()
	return done
}

// TLSConfig returns the TLS configuration of the authenticated API. With
// certFile and keyFile it serves that pair and reloads it when the files
// change (a rotated Secret), for as long as ctx lives; with neither it
// serves a self-signed certificate for this host, made at the first
// handshake (clients then skip verification, as kubelet probes do).
func TLSConfig(ctx context.Context, certFile, keyFile string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	switch {
	case certFile != "" && keyFile != "":
		dc, err := dynamiccertificates.NewDynamicServingContentFromFiles("userquota-rest", certFile, keyFile)
		if err != nil {
			return nil, err
		}
		go dc.Run(ctx, 1)
		cfg.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			c, k := dc.CurrentCertKeyContent()
			pair, err := tls.X509KeyPair(c, k)
			if err != nil {
				return nil, err
			}
			return &pair, nil
		}
	case certFile == "" && keyFile == "":
		// Made at the first handshake: a 2048-bit RSA key takes a while,
		// and most schedulers are never asked.
		var once sync.Once
		var pair tls.Certificate
		var err error
		cfg.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			once.Do(func() { pair, err = selfSigned() })
			return &pair, err
		}
	default:
		return nil, errors.New("a certificate file and a key file go together: give both or neither")
	}
	return cfg, nil
}

// selfSigned makes a certificate for this host, 127.0.0.1 and localhost,
// signed by a CA made for it.
func selfSigned() (tls.Certificate, error) {
	host, err := os.Hostname()
	if err != nil {
		host = "localhost"
	}
	c, k, err := certutil.GenerateSelfSignedCertKey(host, []net.IP{net.ParseIP("127.0.0.1")}, []string{"localhost"})
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("self-signed certificate: %w", err)
	}
	pair, err := tls.X509KeyPair(c, k)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("self-signed certificate: %w", err)
	}
	return pair, nil
}
