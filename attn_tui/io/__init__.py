"""What leaves or enters through files: size-capped reads, whole-file writes, exports, the characters never sent raw."""
