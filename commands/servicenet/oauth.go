package servicenet

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
)

// OAuth consent (docs/servicenet.md, "OAuth consent"): an agent whose card declares
// security_schemes needs a grant the operator completes outside the node.
// The schemes follow OpenAPI's Security Scheme Object, as A2A agent cards do:
//
//	{"<name>": {"type": "oauth2", "flows": {"authorizationCode":
//	    {"authorizationUrl": "…", "tokenUrl": "…", "refreshUrl": "…",
//	     "scopes": {"<scope>": "<description>"}}}}}
//
// Consent takes the first oauth2 scheme by name, and of its flows the first
// that has an authorization URL, in the order authorizationCode, implicit;
// then one with only a token URL (clientCredentials, password). scopes may be
// the OpenAPI map or a plain list.

type securityScheme struct {
	Type  string               `json:"type"`
	Flows map[string]oauthFlow `json:"flows"`
}

type oauthFlow struct {
	AuthorizationURL string          `json:"authorizationUrl"`
	TokenURL         string          `json:"tokenUrl"`
	RefreshURL       string          `json:"refreshUrl"`
	Scopes           json.RawMessage `json:"scopes"`
}

var flowOrder = []string{"authorizationCode", "implicit", "clientCredentials", "password"}

// Consent returns the OAuth consent the card asks for. An error means the
// card declares security schemes the node cannot turn into a consent, which
// is the registry breaking its contract.
func Consent(card Card) (OAuth, error) {
	var schemes map[string]securityScheme
	if err := json.Unmarshal(card.SecuritySchemes, &schemes); err != nil {
		return OAuth{}, fmt.Errorf("security_schemes of agent %s: %w", card.AgentID, err)
	}
	names := make([]string, 0, len(schemes))
	for name, s := range schemes {
		if s.Type == "oauth2" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		for _, f := range flowOrder {
			flow, ok := schemes[name].Flows[f]
			if !ok {
				continue
			}
			c, err := flow.consent()
			if err != nil {
				return OAuth{}, fmt.Errorf("security scheme %s of agent %s, flow %s: %w", name, card.AgentID, f, err)
			}
			return c, nil
		}
	}
	return OAuth{}, fmt.Errorf("agent %s declares security schemes but no OAuth 2 flow", card.AgentID)
}

func (f oauthFlow) consent() (OAuth, error) {
	for _, u := range []string{f.AuthorizationURL, f.TokenURL, f.RefreshURL} {
		if u == "" {
			continue
		}
		if p, err := url.Parse(u); err != nil || (p.Scheme != "https" && p.Scheme != "http") || p.Host == "" {
			return OAuth{}, fmt.Errorf("%q is not an http(s) URL", u)
		}
	}
	if f.TokenURL == "" {
		return OAuth{}, errors.New("no tokenUrl")
	}
	scopes := []string{}
	if len(f.Scopes) > 0 && string(f.Scopes) != "null" {
		var m map[string]string
		if err := json.Unmarshal(f.Scopes, &m); err == nil {
			for s := range m {
				scopes = append(scopes, s)
			}
			slices.Sort(scopes)
		} else if err := json.Unmarshal(f.Scopes, &scopes); err != nil {
			return OAuth{}, errors.New("scopes is neither a map nor a list of strings")
		}
	}
	return OAuth{AuthorizationURL: f.AuthorizationURL, TokenURL: f.TokenURL, RefreshURL: f.RefreshURL, Scopes: scopes}, nil
}
