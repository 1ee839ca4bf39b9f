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

// DelegatingAuth returns a filter that delegates to the API server, the way
// Kubernetes components protect their own endpoints: the bearer token is
// checked with a TokenReview, then the request with a SubjectAccessReview
// for verb get on the request's path as a non-resource URL (as for
// kube-scheduler's /metrics). RBAC grants it with
// `nonResourceURLs: ["/", "/ws/v1/*"], verbs: ["get"]`. There is no
// anonymous access: a request without a token is refused.
func DelegatingAuth(authn authenticationclient.AuthenticationV1Interface, authz authorizationclient.AuthorizationV1Interface) (Filter, error) {
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
	return AuthFilter(a, z), nil
}

// AuthFilter authenticates every request with authn and authorizes it with
// authz as verb get on its path (a non-resource request): 401 when the
// caller is not authenticated, 403 when not allowed, both with a JSON Error.
func AuthFilter(authn authenticator.Request, authz authorizer.Authorizer) Filter {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			resp, ok, err := authn.AuthenticateRequest(r)
			if err != nil || !ok {
				why := "send a bearer token the API server accepts: Authorization: Bearer TOKEN"
				if err != nil {
					why = err.Error()
				}
				w.Header().Set("WWW-Authenticate", `Bearer realm="userquota"`)
				writeError(w, http.StatusUnauthorized, "unauthorized", why)
				return
			}
			attrs := authorizer.AttributesRecord{
				User: resp.User,
				// HEAD reads what GET reads: one RBAC verb for both.
				Verb:            "get",
				Path:            r.URL.Path,
				ResourceRequest: false,
			}
			decision, reason, err := authz.Authorize(r.Context(), attrs)
			if decision != authorizer.DecisionAllow {
				why := reason
				if err != nil {
					why = err.Error()
				}
				if why == "" {
					why = `no RBAC rule allows it: grant verbs ["get"] on nonResourceURLs ["/", "/ws/v1/*"]`
				}
				writeError(w, http.StatusForbidden,
					fmt.Sprintf("forbidden: user %q cannot get path %q", resp.User.GetName(), r.URL.Path), why)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}
