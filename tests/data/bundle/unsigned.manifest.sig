{"algorithm":"none"}
