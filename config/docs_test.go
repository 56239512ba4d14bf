package config

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/lanewatch/lanewatch/internal/decode"
	"github.com/lanewatch/lanewatch/store"
	"gopkg.in/yaml.v3"
)

// docKeys adds every key path of struct type t ("store.kind",
// "lanes[].name") to keys, and each leaf's value in v to leaves (an invalid
// Value inside a list, which has no default).
func docKeys(t reflect.Type, v reflect.Value, prefix string, keys map[string]bool, leaves map[string]reflect.Value) {
	unmarshaler := reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()
	for i, key := range decode.Keys(t) {
		if key == "" {
			continue
		}
		path, ft := prefix+key, t.Field(i).Type
		fv := reflect.Value{}
		if v.IsValid() {
			fv = v.Field(i)
		}
		keys[path] = true
		switch {
		case ft.Kind() == reflect.Struct && !reflect.PointerTo(ft).Implements(unmarshaler):
			docKeys(ft, fv, path+".", keys, leaves)
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			docKeys(ft.Elem(), reflect.Value{}, path+"[].", keys, leaves)
		default:
			leaves[path] = fv
		}
	}
}

// docs/config.md documents exactly the keys the code reads, with the
// defaults the code has, and its YAML examples load.
func TestDocsMatchCode(t *testing.T) {
	data, err := os.ReadFile("../docs/config.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	defaults := Default() // plus those a file or an influx store gets when it loads
	defaults.Store.Path = store.DefaultFilePath
	defaults.Store.Spool, defaults.Store.DeadLetter, defaults.Store.SpoolMaxBytes = store.DefaultSpoolPath, store.DefaultDeadLetterPath, store.DefaultSpoolMaxBytes
	keys, leaves := map[string]bool{}, map[string]reflect.Value{}
	docKeys(reflect.TypeOf(Config{}), reflect.ValueOf(*defaults), "", keys, leaves)

	_, section, ok := strings.Cut(doc, "\n## Keys\n")
	section, _, _ = strings.Cut(section, "\n## ")
	if !ok {
		t.Fatal(`docs/config.md has no "## Keys" section`)
	}
	row := regexp.MustCompile("(?m)^\\| (`[^|]+)\\|([^|]*)\\|")
	tick := regexp.MustCompile("`([^`]+)`")
	documented := map[string]bool{}
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		def := tick.FindAllStringSubmatch(m[2], -1)
		for _, k := range tick.FindAllStringSubmatch(m[1], -1) {
			key := k[1]
			documented[key] = true
			if !keys[key] {
				t.Errorf("docs/config.md documents %q, which the code does not read", key)
			}
			// A default written as one `value` must be the code's default.
			fv := leaves[key]
			if len(def) != 1 || !fv.IsValid() || fv.IsZero() {
				continue
			}
			n := &yaml.Node{Kind: yaml.ScalarNode, Value: def[0][1]}
			if fv.Kind() == reflect.String {
				n.Tag = "!!str"
			}
			got := reflect.New(fv.Type())
			if _, err := decode.Decode(n, got.Interface()); err != nil || !reflect.DeepEqual(got.Elem().Interface(), fv.Interface()) {
				t.Errorf("%s: documented default %s, code has %v (%v)", key, def[0][1], fv.Interface(), err)
			}
		}
	}
	for key := range leaves {
		if !documented[key] {
			t.Errorf("docs/config.md does not document %q", key)
		}
	}

	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(doc, -1)
	if len(blocks) == 0 {
		t.Fatal("docs/config.md has no YAML example")
	}
	for _, b := range blocks {
		src := b[1]
		if !strings.Contains(src, "\nlanes:") {
			src += minimal
		}
		if _, err := Parse(strings.NewReader(src), "/"); err != nil {
			t.Errorf("example does not load: %v\n%s", err, b[1])
		}
	}
}
