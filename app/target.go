package app

import (
	"github.com/lanewatch/lanewatch/config"
	"github.com/lanewatch/lanewatch/probe"
)

// Target is the probe target of a configured lane with its key.
func Target(l config.Lane, key string) probe.Target {
	return probe.Target{
		Lane:         l.Name,
		Kind:         l.Kind,
		API:          probe.API(l.API),
		BaseURL:      l.BaseURL,
		Model:        l.Model,
		APIKey:       key,
		Prompt:       l.Prompt,
		MaxTokens:    l.MaxTokens,
		Timeout:      l.Timeout.D(),
		IncludeUsage: l.IncludeUsage == nil || *l.IncludeUsage,
	}
}
