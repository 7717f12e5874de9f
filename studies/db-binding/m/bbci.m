bbci ; call-in entry points, one per binding style (a C binding on GT.M reaches globals only through these)
next(x) ; c-callin: the subscript after x in ^BCAT("lvd",*), "" after the last
 quit $order(^BCAT("lvd",x))
nextref(ref) ; naive: the last subscript after the node the reference names, rebuilt by the binding each call
 ; (M compiles every distinct indirection string: the cost a generic binding pays when it rebuilds it)
 quit $order(@ref)
next2(g,s1,x) ; cached: the global and first subscript stay the same, only the last one changes
 quit $order(@g@(s1,x))
batch(g,s1,x,n,out) ; batched: up to n subscripts after x, comma-separated, in one call
 new i,y
 set out="",y=x
 for i=1:1:n set y=$order(@g@(s1,y)) quit:y=""  set out=out_$select(i>1:",",1:"")_y
 quit
