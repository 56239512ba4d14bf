package lineproto

import "strconv"

// A plain line is one of the shape lanewatch's stores write: the
// measurement, tags and field keys of printable ASCII without escapes,
// quotes or backslashes, decimal numbers, true or false, strings without
// escapes, and a timestamp. Plain reads such a line without the
// line-protocol library's general machinery (a year of probes decodes in a
// quarter of the time); any other line is left to the library, which stays
// the authority: FuzzPlainLine checks that whatever Plain accepts, the
// library reads the same way.

// Plain reads line if it is plain and of measurement want, handing each
// tag to tag and each field to field; ok is false, with nothing handed on,
// when it is not (Library reads it then). An error from field ends the
// read.
func Plain(line []byte, want string, tag func(k, v []byte), field func(k []byte, v Value) error) (ns int64, ok bool, err error) {
	if !HasMeasurement(line, want) {
		return 0, false, nil
	}
	// Each part checks its own characters as it is read: names and string
	// values are printable ASCII without backslashes (plainWord,
	// plainString), numbers and the timestamp are digits and signs.
	//
	// The whole line is read before anything is handed on, so that nothing
	// is from a line that turns out not to be plain. A line of more tags
	// or fields than the stores write goes to the library.
	var tags [maxPlainTags][4]int // key start, key end, value start, value end
	var fields [maxPlainFields]struct {
		k0, k1 int
		v      Value
	}
	nt, nf := 0, 0
	i := len(want)
	for i < len(line) && line[i] == ',' {
		k0 := i + 1
		k1 := plainWord(line, k0)
		if k1 == k0 || k1 >= len(line) || line[k1] != '=' {
			return 0, false, nil
		}
		v1 := plainWord(line, k1+1)
		if v1 == k1+1 || nt == maxPlainTags {
			return 0, false, nil
		}
		tags[nt] = [4]int{k0, k1, k1 + 1, v1}
		nt++
		i = v1
	}
	if i >= len(line) || line[i] != ' ' {
		return 0, false, nil
	}
	i++
	for {
		k0 := i
		k1 := plainWord(line, k0)
		if k1 == k0 || k1 >= len(line) || line[k1] != '=' || nf == maxPlainFields {
			return 0, false, nil
		}
		v0 := k1 + 1
		var v Value
		if v0 < len(line) && line[v0] == '"' {
			v1 := plainString(line, v0+1)
			if v1 >= len(line) || line[v1] != '"' {
				return 0, false, nil
			}
			v = Value{Kind: String, S: line[v0+1 : v1]}
			i = v1 + 1
		} else {
			v1 := v0
			for v1 < len(line) && line[v1] != ',' && line[v1] != ' ' && line[v1] != '"' {
				v1++
			}
			if v, ok = plainValue(line[v0:v1]); !ok {
				return 0, false, nil
			}
			i = v1
		}
		fields[nf].k0, fields[nf].k1, fields[nf].v = k0, k1, v
		nf++
		if i >= len(line) {
			return 0, false, nil // no timestamp
		}
		if line[i] == ' ' {
			break
		}
		if line[i] != ',' {
			return 0, false, nil
		}
		i++
	}
	if ns, ok = plainTime(line[i+1:]); !ok {
		return 0, false, nil
	}
	for _, t := range tags[:nt] {
		tag(line[t[0]:t[1]], line[t[2]:t[3]])
	}
	for _, f := range fields[:nf] {
		if err := field(line[f.k0:f.k1], f.v); err != nil {
			return 0, true, err
		}
	}
	return ns, true, nil
}

// The most tags and fields a plain line has (lanewatch's stores write up to
// three tags and ten fields); a line of more goes to Library.
const (
	maxPlainTags   = 8
	maxPlainFields = 16
)

// plainWord returns the end of the run of plain name characters at i:
// printable ASCII but for space, comma, equals, the double quote and the
// backslash. The caller checks that the character it stops at is the one
// that may follow.
func plainWord(line []byte, i int) int {
	for i < len(line) {
		c := line[i]
		if c <= ' ' || c >= 0x7f || c == ',' || c == '=' || c == '"' || c == '\\' {
			return i
		}
		i++
	}
	return i
}

// plainString returns the end of the run of plain string characters at i:
// printable ASCII but for the double quote and the backslash.
func plainString(line []byte, i int) int {
	for i < len(line) {
		c := line[i]
		if c < ' ' || c >= 0x7f || c == '"' || c == '\\' {
			return i
		}
		i++
	}
	return i
}

// plainValue reads a plain number or boolean: -?digits[.digits][e[+-]digits]
// (a float), -?digits followed by i (an integer), true or false.
func plainValue(b []byte) (Value, bool) {
	switch string(b) {
	case "true":
		return Value{Kind: Bool, B: true}, true
	case "false":
		return Value{Kind: Bool}, true
	}
	if len(b) > 1 && b[len(b)-1] == 'i' {
		d := b[:len(b)-1]
		if !plainInt(d) {
			return Value{}, false
		}
		x, err := strconv.ParseInt(string(d), 10, 64)
		if err != nil {
			return Value{}, false
		}
		return Value{Kind: Int, I: x}, true
	}
	if !plainFloat(b) {
		return Value{}, false
	}
	x, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return Value{}, false // out of range: the library words the error
	}
	return Value{Kind: Float, F: x}, true
}

func plainInt(b []byte) bool {
	if len(b) > 0 && b[0] == '-' {
		b = b[1:]
	}
	return len(b) > 0 && digits(b) == len(b)
}

func plainFloat(b []byte) bool {
	if len(b) > 0 && b[0] == '-' {
		b = b[1:]
	}
	n := digits(b)
	if n == 0 {
		return false
	}
	b = b[n:]
	if len(b) > 0 && b[0] == '.' {
		n = digits(b[1:])
		if n == 0 {
			return false
		}
		b = b[1+n:]
	}
	if len(b) > 0 && (b[0] == 'e' || b[0] == 'E') {
		b = b[1:]
		if len(b) > 0 && (b[0] == '+' || b[0] == '-') {
			b = b[1:]
		}
		n = digits(b)
		if n == 0 {
			return false
		}
		b = b[n:]
	}
	return len(b) == 0
}

func digits(b []byte) int {
	n := 0
	for n < len(b) && b[n] >= '0' && b[n] <= '9' {
		n++
	}
	return n
}

// plainTime reads a timestamp in nanoseconds: -?digits, within the range
// the stores accept.
func plainTime(b []byte) (int64, bool) {
	if !plainInt(b) || len(b) > 20 {
		return 0, false
	}
	ns, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil || ns < MinNano || ns > MaxNano {
		return 0, false
	}
	return ns, true
}
