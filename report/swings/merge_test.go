package swings_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/lanewatch/lanewatch/report/swings"
	"github.com/lanewatch/lanewatch/store"
)

func TestMergeSites(t *testing.T) {
	h0 := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
	h1 := h0.Add(time.Hour)
	at := func(lane, kind, site string, h time.Time, q, cens float64, n, f int64) store.Hourly {
		return store.Hourly{Lane: lane, Kind: kind, Site: site, Hour: h, WorstQueueS: q, WorstCensoredS: cens,
			WorstGenS: 9, MinTokPerS: 40, Samples: n, Failures: f, Eligible: f == 0}
	}
	merged := func(lane, kind string, h time.Time, q, cens float64, n, f int64) store.Hourly {
		return store.Hourly{Lane: lane, Kind: kind, Hour: h, WorstQueueS: q, WorstCensoredS: cens, Samples: n, Failures: f}
	}
	cases := []struct {
		name string
		in   []store.Hourly
		want []store.Hourly
	}{
		{"none", nil, nil},
		{"one record keeps its figures, not its site", []store.Hourly{at("a", "free", "fra1", h0, 3, 0, 2, 0)},
			[]store.Hourly{merged("a", "free", h0, 3, 0, 2, 0)}},
		{"sites merge: worst of the worsts, sum of probes", []store.Hourly{
			at("a", "free", "fra1", h0, 3, 0, 2, 0),
			at("a", "free", "iad1", h0, 1, 30, 3, 1),
		}, []store.Hourly{merged("a", "free", h0, 3, 30, 5, 1)}},
		{"a copy per kind counts once, the first kind named", []store.Hourly{
			at("a", "free", "", h0, 3, 0, 2, 0),
			at("a", "paid", "", h0, 3, 0, 2, 0),
		}, []store.Hourly{merged("a", "free", h0, 3, 0, 2, 0)}},
		{"lanes and hours stay apart, in first-seen order", []store.Hourly{
			at("b", "paid", "", h1, 1, 0, 1, 0),
			at("a", "free", "", h0, 2, 0, 1, 0),
			at("b", "paid", "", h0, 4, 0, 1, 1),
		}, []store.Hourly{merged("b", "paid", h1, 1, 0, 1, 0), merged("a", "free", h0, 2, 0, 1, 0), merged("b", "paid", h0, 4, 0, 1, 1)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := swings.MergeSites(c.in); !reflect.DeepEqual(got, c.want) {
				t.Errorf("got  %+v\nwant %+v", got, c.want)
			}
		})
	}
}
