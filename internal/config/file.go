package config

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/warcproxy/warcproxy/internal/suggest"
)

// applyFile sets, from the YAML document data, every key not in skip (the
// keys given on the command line). Values go through the same parsers as
// the flags. A key present with no value (null) leaves the setting alone.
func applyFile(data []byte, gs []group, skip map[string]bool) error {
	var keys []*option
	for _, g := range gs {
		for _, o := range g.options {
			if o.inFile {
				keys = append(keys, o)
			}
		}
	}

	// One yaml.Node field per key: KnownFields rejects any other key, and
	// each value stays a node for its option's parser.
	fields := make([]reflect.StructField, len(keys))
	for i, o := range keys {
		fields[i] = reflect.StructField{
			Name: fmt.Sprintf("K%d", i),
			Type: reflect.TypeFor[yaml.Node](),
			Tag:  reflect.StructTag(fmt.Sprintf("yaml:%q", o.name)),
		}
	}
	doc := reflect.New(reflect.StructOf(fields))

	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(doc.Interface()); err != nil {
		if errors.Is(err, io.EOF) {
			return nil // empty file
		}
		return fileError(err, keys)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return errors.New("holds more than one YAML document")
	}

	for i, o := range keys {
		n := doc.Elem().Field(i).Addr().Interface().(*yaml.Node)
		if n.IsZero() || skip[o.name] { // absent, or given as a flag
			continue
		}
		if err := setFromNode(o, n); err != nil {
			return fmt.Errorf("line %d: %s: %w", n.Line, o.name, err)
		}
	}
	return nil
}

func setFromNode(o *option, n *yaml.Node) error {
	for n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return nil
	}
	list, isList := o.value.(listValue)
	switch {
	case n.Kind == yaml.ScalarNode:
		if isList {
			list.reset()
		}
		return setValue(o.value, n.Value)
	case n.Kind == yaml.SequenceNode && isList:
		list.reset()
		for _, item := range n.Content {
			for item.Kind == yaml.AliasNode {
				item = item.Alias
			}
			if item.Kind != yaml.ScalarNode || item.ShortTag() == "!!null" {
				return fmt.Errorf("line %d: want a list of single values", item.Line)
			}
			if err := setValue(list, item.Value); err != nil {
				return err
			}
		}
		return nil
	case isList:
		return errors.New("want a value or a list of values")
	}
	return errors.New("want a single value, not a list or mapping")
}

// setValue is v.Set with the value in the error, as the flag package
// reports it.
func setValue(v flag.Value, s string) error {
	if err := v.Set(s); err != nil {
		return fmt.Errorf("invalid value %q: %w", s, err)
	}
	return nil
}

var (
	unknownFieldRE = regexp.MustCompile(`^line (\d+): field (.*) not found in type `)
	cannotDecodeRE = regexp.MustCompile(`^line (\d+): cannot unmarshal (\S+)`)
)

// fileError rewrites yaml.v3's errors about the generated struct into
// messages about keys.
func fileError(err error, keys []*option) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		// A syntax error; yaml.v3 names the line, mostly.
		if strings.Contains(err.Error(), "block sequence entries are not allowed") {
			return fmt.Errorf("%w (quote a lone -, as in prefix: \"-\")", err)
		}
		return err
	}
	var msgs []string
	for _, e := range te.Errors {
		if m := unknownFieldRE.FindStringSubmatch(e); m != nil {
			msg := fmt.Sprintf("line %s: unknown key %q", m[1], m[2])
			if hint, ok := warcproxHint(strings.ReplaceAll(m[2], "_", "-")); ok {
				msg += fmt.Sprintf(" (%s)", warcproxOnlyMsg(hint))
			} else if s, _ := suggest.Find(m[2], keyCandidates(keys)); len(s) > 0 {
				msg += " (did you mean " + suggest.OneOf(quoteAll(s)) + "?)"
			}
			msgs = append(msgs, msg)
		} else if m := cannotDecodeRE.FindStringSubmatch(e); m != nil {
			msgs = append(msgs, fmt.Sprintf("line %s: want a mapping of keys to values, found %s", m[1], m[2]))
		} else {
			msgs = append(msgs, e)
		}
	}
	return errors.New(strings.Join(msgs, "; "))
}
