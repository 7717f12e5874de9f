bbci ; call-in entry points: one node per call, as a C binding through call-ins must go
next(x) ; the subscript after x in ^BCAT("lvd",*), "" after the last
 quit $order(^BCAT("lvd",x))
