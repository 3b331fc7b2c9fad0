package evalprocessor

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/xpdata/entity"
)

// Holding splits a request by trace: each held trace gets its own copy of
// the resource and scope its spans came under. Handed on as they are, the
// traces released together would leave as one resource and one scope per
// trace (a request of 100 traces from one service: 100 copies of its
// resource), which the exporter marshals and the backend stores 100 times.
// moveTraces puts them back together.

// mergeWindow is how many of dst's last resources (scopes) a moved one is
// compared with: consecutive traces nearly always share theirs, and a
// bound keeps a request of many services from turning quadratic.
const mergeWindow = 4

// moveTraces moves src's spans into dst (src is left empty): under a
// resource and scope of dst that are the same as theirs where there is
// one among the last few, else as they are. dstShared and srcShared list
// their shared resources (sharedres.go); it returns dst's list after the
// move.
func moveTraces(dst ptrace.Traces, dstShared []*sharedResource, src ptrace.Traces, srcShared []*sharedResource) []*sharedResource {
	drs := dst.ResourceSpans()
	tracked := dstShared != nil || srcShared != nil
	var kept []*sharedResource // of src's ResourceSpans that join dst as they are
	i := -1
	src.ResourceSpans().RemoveIf(func(rs ptrace.ResourceSpans) bool {
		i++
		sh := sharedAt(srcShared, i)
		into, ok := sameResourceIn(drs, dstShared, rs, sh)
		if !ok {
			if tracked {
				kept = append(kept, sh)
			}
			return false
		}
		rs.ScopeSpans().RemoveIf(func(ss ptrace.ScopeSpans) bool {
			dss, ok := sameScopeIn(into.ScopeSpans(), ss)
			if ok {
				ss.Spans().MoveAndAppendTo(dss.Spans())
			}
			return ok
		})
		rs.ScopeSpans().MoveAndAppendTo(into.ScopeSpans())
		return true
	})
	if tracked && dstShared == nil {
		dstShared = make([]*sharedResource, drs.Len(), drs.Len()+len(kept))
	}
	src.ResourceSpans().MoveAndAppendTo(drs)
	return append(dstShared, kept...)
}

// sameResourceIn returns the resource among the last of rss that is the
// same as rs's: attributes, dropped count and schema URL (resources with
// entity references are left apart). rssShared and sh are their shared
// resources: two that share one copy are the same without comparing.
func sameResourceIn(rss ptrace.ResourceSpansSlice, rssShared []*sharedResource, rs ptrace.ResourceSpans, sh *sharedResource) (ptrace.ResourceSpans, bool) {
	r := rs.Resource()
	if sh != nil {
		r = sh.rs.Resource()
	}
	if entity.ResourceEntityRefs(r).Len() > 0 {
		return ptrace.ResourceSpans{}, false
	}
	for i := rss.Len() - 1; i >= 0 && i >= rss.Len()-mergeWindow; i-- {
		c := rss.At(i)
		if sh != nil && sharedAt(rssShared, i) == sh {
			return c, true
		}
		cr := resourceSpansAt(rss, rssShared, i).Resource()
		if c.SchemaUrl() == rs.SchemaUrl() && cr.DroppedAttributesCount() == r.DroppedAttributesCount() &&
			sameAttributes(cr.Attributes(), r.Attributes()) && entity.ResourceEntityRefs(cr).Len() == 0 {
			return c, true
		}
	}
	return ptrace.ResourceSpans{}, false
}

// sameScopeIn is sameResourceIn for a scope: name, version, attributes,
// dropped count and schema URL.
func sameScopeIn(sss ptrace.ScopeSpansSlice, ss ptrace.ScopeSpans) (ptrace.ScopeSpans, bool) {
	s := ss.Scope()
	for i := sss.Len() - 1; i >= 0 && i >= sss.Len()-mergeWindow; i-- {
		c := sss.At(i)
		cs := c.Scope()
		if c.SchemaUrl() == ss.SchemaUrl() && cs.Name() == s.Name() && cs.Version() == s.Version() &&
			cs.DroppedAttributesCount() == s.DroppedAttributesCount() && sameAttributes(cs.Attributes(), s.Attributes()) {
			return c, true
		}
	}
	return ptrace.ScopeSpans{}, false
}

// sameAttributes compares two attribute maps in order: copies of one map
// (what holding makes) are in the same order. pcommon.Map.Equal looks each
// key up in the other map, quadratic in the attributes of a resource. Maps with the same pairs in
// another order, or of more than maxMergedAttributes, count as different,
// which only leaves them apart.
func sameAttributes(a, b pcommon.Map) bool {
	n := a.Len()
	if n != b.Len() || n > maxMergedAttributes {
		return false
	}
	var keys [maxMergedAttributes]string
	var vals [maxMergedAttributes]pcommon.Value
	i := 0
	b.Range(func(k string, v pcommon.Value) bool {
		keys[i], vals[i] = k, v
		i++
		return true
	})
	i = 0
	same := true
	a.Range(func(k string, v pcommon.Value) bool {
		same = keys[i] == k && vals[i].Equal(v)
		i++
		return same
	})
	return same
}

const maxMergedAttributes = 64
