package evalprocessor

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/xpdata/entity"
)

// Holding splits a request by trace: each held trace gets a ResourceSpans
// and a ScopeSpans of its own for the spans it took from it (sharing one
// copy of the resource: sharedres.go). Handed on as they are, the traces
// released together would leave as one resource and one scope per trace (a
// request of 100 traces from one service: 100 copies of its resource),
// which the exporter marshals and the backend stores 100 times. moveTraces
// puts them back together; moveLogs does the same for log records.

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

// moveLogs is moveTraces for log records (released log chunks of one
// request's resource go on under one resource again).
func moveLogs(dst plog.Logs, dstShared []*sharedResource, src plog.Logs, srcShared []*sharedResource) []*sharedResource {
	drl := dst.ResourceLogs()
	tracked := dstShared != nil || srcShared != nil
	var kept []*sharedResource
	i := -1
	src.ResourceLogs().RemoveIf(func(rl plog.ResourceLogs) bool {
		i++
		sh := sharedAt(srcShared, i)
		into, ok := sameResourceIn(drl, dstShared, rl, sh)
		if !ok {
			if tracked {
				kept = append(kept, sh)
			}
			return false
		}
		rl.ScopeLogs().RemoveIf(func(sl plog.ScopeLogs) bool {
			dsl, ok := sameScopeIn(into.ScopeLogs(), sl)
			if ok {
				sl.LogRecords().MoveAndAppendTo(dsl.LogRecords())
			}
			return ok
		})
		rl.ScopeLogs().MoveAndAppendTo(into.ScopeLogs())
		return true
	})
	if tracked && dstShared == nil {
		dstShared = make([]*sharedResource, drl.Len(), drl.Len()+len(kept))
	}
	src.ResourceLogs().MoveAndAppendTo(drl)
	return append(dstShared, kept...)
}

// listOf is a pdata slice of resources or scopes.
type listOf[T any] interface {
	Len() int
	At(int) T
}

// sameResourceIn returns the resource among the last of rs's (a
// ResourceSpansSlice or ResourceLogsSlice) that is the same as r's:
// attributes, dropped count and schema URL (resources with entity
// references are left apart). rsShared and sh are their shared resources:
// two that share one copy are the same without comparing.
func sameResourceIn[R resourceOf](rs listOf[R], rsShared []*sharedResource, r R, sh *sharedResource) (R, bool) {
	var none R
	res := r.Resource()
	if sh != nil {
		res = sh.rs.Resource()
	}
	if entity.ResourceEntityRefs(res).Len() > 0 {
		return none, false
	}
	for i := rs.Len() - 1; i >= 0 && i >= rs.Len()-mergeWindow; i-- {
		c := rs.At(i)
		csh := sharedAt(rsShared, i)
		if sh != nil && csh == sh {
			return c, true
		}
		cr := resourceAt(rsShared, i, c.Resource())
		if c.SchemaUrl() == r.SchemaUrl() && cr.DroppedAttributesCount() == res.DroppedAttributesCount() &&
			sameAttributes(cr.Attributes(), res.Attributes()) && entity.ResourceEntityRefs(cr).Len() == 0 {
			return c, true
		}
	}
	return none, false
}

// sameScopeIn is sameResourceIn for a scope (of spans or of log records):
// name, version, attributes, dropped count and schema URL.
func sameScopeIn[S scopeOf](ss listOf[S], s S) (S, bool) {
	var none S
	sc := s.Scope()
	for i := ss.Len() - 1; i >= 0 && i >= ss.Len()-mergeWindow; i-- {
		c := ss.At(i)
		cs := c.Scope()
		if c.SchemaUrl() == s.SchemaUrl() && cs.Name() == sc.Name() && cs.Version() == sc.Version() &&
			cs.DroppedAttributesCount() == sc.DroppedAttributesCount() && sameAttributes(cs.Attributes(), sc.Attributes()) {
			return c, true
		}
	}
	return none, false
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
