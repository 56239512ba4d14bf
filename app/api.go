package app

import (
	"github.com/lanewatch/lanewatch/api"
	"github.com/lanewatch/lanewatch/config"
)

// Endpoints returns the config's lanes as the API's endpoints, in config
// order: the name of each key's variable, never a key.
func Endpoints(cfg *config.Config) []api.Endpoint {
	out := make([]api.Endpoint, len(cfg.Lanes))
	for i, l := range cfg.Lanes {
		out[i] = api.Endpoint{Name: l.Name, Kind: l.Kind, API: l.API, BaseURL: l.BaseURL, Model: l.Model, APIKeyEnv: l.APIKeyEnv}
	}
	return out
}

// APIOptions returns the options of the JSON API over cfg's policy files
// (policy.out, in the config's timezone).
func APIOptions(cfg *config.Config) api.Options {
	return api.Options{Folder: api.Folder{Dir: cfg.Policy.Out, Location: cfg.Location}, Lanes: Endpoints(cfg)}
}
