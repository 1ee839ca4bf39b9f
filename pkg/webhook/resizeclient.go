package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"

	"github.com/userquota/userquota/pkg/rest/dao"
)

// LookupHost resolves a host name to its addresses (net.Resolver's
// LookupHost; tests give their own).
type LookupHost func(ctx context.Context, host string) ([]string, error)

// SchedulerResizeChecker asks the scheduler's REST API at baseURL (its
// resize check, dao.ResizeCheckPath, for partition) with the bearer token in
// tokenFile (read at each call: a projected token is renewed on disk; ""
// sends none), trusting the CA in caFile ("" uses the system's).
//
// Only the leading replica answers the check; a follower answers 503 with
// dao.HeaderLeader false. So every address baseURL's host resolves to (a
// headless Service: one per ready replica) is asked in turn until one
// leads, the one that led last first. Each is dialled by address and
// verified by the host's name (the serving certificate names the Service).
// lookup nil resolves with the system's resolver.
func SchedulerResizeChecker(baseURL, partition, tokenFile, caFile string, lookup LookupHost) (ResizeChecker, error) {
	base, err := url.Parse(strings.TrimSuffix(baseURL, "/"))
	if err != nil || base.Scheme != "https" && base.Scheme != "http" || base.Host == "" {
		return nil, fmt.Errorf("--scheduler-url %q: want https://host:port", baseURL)
	}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("--scheduler-ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--scheduler-ca-file %s: no PEM certificate", caFile)
		}
		tlsConfig.RootCAs = pool
	}
	if lookup == nil {
		lookup = net.DefaultResolver.LookupHost
	}
	c := &replicas{lookup: lookup, host: base.Hostname(), port: base.Port(), tokenFile: tokenFile,
		endpoint: base.String() + strings.Replace(dao.ResizeCheckPath, "{partition}", url.PathEscape(partition), 1)}
	if c.port == "" {
		c.port = map[string]string{"https": "443", "http": "80"}[base.Scheme]
	}
	dialer := &net.Dialer{}
	c.client = &http.Client{Timeout: resizeTimeout, Transport: &http.Transport{
		TLSClientConfig: tlsConfig,
		// A connection is to one replica while the URL names them all:
		// none is kept for another request, which may go elsewhere.
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			addr, _ := ctx.Value(dialKey{}).(string)
			return dialer.DialContext(ctx, network, addr)
		},
	}}
	return c.check, nil
}

// dialKey carries the replica's address a request is dialled to.
type dialKey struct{}

// replicas asks the scheduler's replicas for the resize check.
type replicas struct {
	lookup     LookupHost
	host, port string
	tokenFile  string
	endpoint   string
	client     *http.Client
	mu         sync.Mutex
	leader     string // the address that led last
}

// errFollower is a replica's answer that it does not lead.
var errFollower = errors.New("not the leader")

func (c *replicas) check(ctx context.Context, pod []byte) (dao.ResizeCheck, error) {
	addrs, err := c.lookup(ctx, c.host)
	if err != nil {
		return dao.ResizeCheck{}, fmt.Errorf("resolving %s: %w", c.host, err)
	}
	c.mu.Lock()
	leader := c.leader
	c.mu.Unlock()
	for i, a := range addrs {
		if a == leader {
			addrs[0], addrs[i] = addrs[i], addrs[0]
		}
	}
	var errs []error
	for _, a := range addrs {
		answer, err := c.ask(ctx, net.JoinHostPort(a, c.port), pod)
		if err == nil {
			c.mu.Lock()
			c.leader = a
			c.mu.Unlock()
			return answer, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", a, err))
		if ctx.Err() != nil {
			break
		}
	}
	if len(errs) == 0 {
		return dao.ResizeCheck{}, fmt.Errorf("%s resolves to no address", c.host)
	}
	return dao.ResizeCheck{}, fmt.Errorf("POST %s: no replica answered as the leader: %w", c.endpoint, errors.Join(errs...))
}

// ask POSTs pod to the replica at addr.
func (c *replicas) ask(ctx context.Context, addr string, pod []byte) (dao.ResizeCheck, error) {
	var answer dao.ResizeCheck
	r, err := http.NewRequestWithContext(context.WithValue(ctx, dialKey{}, addr), http.MethodPost, c.endpoint, bytes.NewReader(pod))
	if err != nil {
		return answer, err
	}
	r.Header.Set("Content-Type", "application/json")
	if c.tokenFile != "" {
		token, err := os.ReadFile(c.tokenFile)
		if err != nil {
			return answer, fmt.Errorf("reading the token: %w", err)
		}
		r.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	}
	resp, err := c.client.Do(r)
	if err != nil {
		return answer, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return answer, err
	}
	switch {
	case resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get(dao.HeaderLeader) == "false":
		return answer, errFollower
	case resp.StatusCode != http.StatusOK:
		return answer, fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	if err := json.Unmarshal(body, &answer); err != nil {
		return answer, err
	}
	return answer, nil
}
