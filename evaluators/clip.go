package evaluators

// ClipText shortens s to at most n bytes on a rune boundary, saying how much
// was cut: the bound judge prompts put on one field (max_field_bytes). The
// session store keeps turns within the same bound, so a session holds no
// more of a field than a judge would ever be shown.
func ClipText(s string, n int) string { return clipText(s, n) }
