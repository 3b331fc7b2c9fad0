// Package copartitionbalancer is a Kafka consumer-group balancer, plugged into
// contrib's kafka receiver with `group_rebalance_strategies`, that gives the
// same partition numbers of every topic to the members of one collector.
//
// Contrib's kafka receiver runs one consumer (one group member) per signal, so
// with any built-in strategy partition 3 of the traces topic and partition 3
// of the logs topic may go to different collectors, although tier 1 keyed
// both by the same trace id. This balancer runs in every member of the group
// (the traces and the logs consumer of each collector): each member advertises
// its collector's id in the join metadata, and the group leader deals out
// partition numbers ("slots") to collectors, then gives each member the
// partitions of its slots in the topics it consumes — co-partitioning, as
// Kafka Streams does.
package copartitionbalancer

//go:generate go run ../../internal/telemetrydoc/mdgen
