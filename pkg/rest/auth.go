package rest

import (
	"fmt"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/endpoints/request"
	authenticationclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
)

// How the delegated answers are cached and retried: kube-scheduler's own
// defaults for its secure port (--authentication-token-webhook-cache-ttl,
// --authorization-webhook-cache-*), so a dashboard polling every few
// seconds costs the API server one review per user and path every 10 s.
const (
	authCacheTTL = 10 * time.Second
	authTimeout  = 10 * time.Second
)

// authBackoff is the apiserver's default webhook retry backoff
// (options.DefaultAuthWebhookRetryBackoff).
func authBackoff() *wait.Backoff {
	return &wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5}
}

// Auth protects the API the way Kubernetes components protect their own
// endpoints, delegating to the API server: every path but /healthz and
// /readyz is authenticated (a bearer token, TokenReview); every one of them
// but the caller's own usage (/ws/v1/partition/{p}/usage/me) is also
// authorized (SubjectAccessReview for verb get on the request's path as a
// non-resource URL, as for kube-scheduler's /metrics; RBAC grants it with
// `nonResourceURLs: ["/", "/ws/v1/*"], verbs: ["get"]`). The caller's own
// usage needs no RBAC: it shows only what the authenticated name and
// groups select (docs/security.md, "Each user sees their own"). There is
// no anonymous access: a request without a token is refused.
type Auth struct {
	Authenticator authenticator.Request
	Authorizer    authorizer.Authorizer
}

// DelegatingAuth returns the Auth that asks the API server: TokenReviews
// through authn, SubjectAccessReviews through authz, each answer cached
// for authCacheTTL.
func DelegatingAuth(authn authenticationclient.AuthenticationV1Interface, authz authorizationclient.AuthorizationV1Interface) (*Auth, error) {
	a, _, err := authenticatorfactory.DelegatingAuthenticatorConfig{
		TokenAccessReviewClient:  authn,
		TokenAccessReviewTimeout: authTimeout,
		WebhookRetryBackoff:      authBackoff(),
		CacheTTL:                 authCacheTTL,
	}.New()
	if err != nil {
		return nil, fmt.Errorf("delegating authentication: %w", err)
	}
	z, err := authorizerfactory.DelegatingAuthorizerConfig{
		SubjectAccessReviewClient: authz,
		AllowCacheTTL:             authCacheTTL,
		DenyCacheTTL:              authCacheTTL,
		WebhookRetryBackoff:       authBackoff(),
	}.New()
	if err != nil {
		return nil, fmt.Errorf("delegating authorization: %w", err)
	}
	return &Auth{Authenticator: a, Authorizer: z}, nil
}

// authenticate answers 401 with a JSON Error unless the request carries
// credentials the authenticator accepts; otherwise it puts the caller in
// the request's context (request.UserFrom reads it) and goes on.
func (a *Auth) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, ok, err := a.Authenticator.AuthenticateRequest(r)
		if err != nil || !ok {
			why := "send a bearer token the API server accepts: Authorization: Bearer TOKEN"
			if err != nil {
				why = err.Error()
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="userquota"`)
			writeError(w, http.StatusUnauthorized, "unauthorized", why)
			return
		}
		next.ServeHTTP(w, r.WithContext(request.WithUser(r.Context(), resp.User)))
	})
}

// authorize answers 403 with a JSON Error unless the authorizer allows the
// caller (put in the context by authenticate) verb get on the request's
// path, a non-resource request. Without a caller in the context it refuses:
// authorize never runs alone.
func (a *Auth) authorize(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, ok := request.UserFrom(r.Context())
		if !ok {
			writeError(w, http.StatusForbidden, fmt.Sprintf("forbidden: cannot get path %q", r.URL.Path), "the request was not authenticated")
			return
		}
		attrs := authorizer.AttributesRecord{
			User: u,
			// HEAD reads what GET reads: one RBAC verb for both.
			Verb:            "get",
			Path:            r.URL.Path,
			ResourceRequest: false,
		}
		decision, reason, err := a.Authorizer.Authorize(r.Context(), attrs)
		if decision != authorizer.DecisionAllow {
			why := reason
			if err != nil {
				why = err.Error()
			}
			if why == "" {
				why = `no RBAC rule allows it: grant verbs ["get"] on nonResourceURLs ["/", "/ws/v1/*"]`
			}
			writeError(w, http.StatusForbidden,
				fmt.Sprintf("forbidden: user %q cannot get path %q", u.GetName(), r.URL.Path), why)
			return
		}
		next.ServeHTTP(w, r)
	})
}
