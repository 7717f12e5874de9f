bbci ; call-in entry points, one set per binding style (a C binding on GT.M reaches globals only through these)
 ; Batches are length-prefixed: each subscript or value is $char(its length in bytes) then its bytes (a key
 ; holds at most 255 bytes), so subscripts with commas, quotes or any byte pass through unchanged.
 quit
 ;
next(x) ; c-callin, Python, Go: the subscript after x in ^BCAT("lvd",*), "" after the last
 quit $order(^BCAT("lvd",x))
get(x,out) ; the value of ^BCAT("lvd",x), "" if it has none
 set out=$get(^BCAT("lvd",x))
 quit
set(x,v) ; ^BBSET("lvd",x)=v
 set ^BBSET("lvd",x)=v
 quit
clear() ; every mechanism's set benchmark starts from an empty ^BBSET
 kill ^BBSET
 quit
tally() ; "count sum" of ^BBSET("lvd",*): the set benchmark's answer, read back by one call in every mechanism
 new c,s,x
 set (c,s)=0,x=""
 for  set x=$order(^BBSET("lvd",x)) quit:x=""  set c=c+1,s=s+^BBSET("lvd",x)
 quit c_" "_s
 ;
nextref(ref) ; naive: the reference is rebuilt by the binding on every call, and M compiles every distinct
 ; indirection string: the cost a generic binding pays when it rebuilds it
 quit $order(@ref)
getref(ref,out) ; naive get
 set out=$get(@ref)
 quit
setref(ref,v) ; naive set
 set @ref=v
 quit
 ;
next2(g,s1,x) ; cached: the global and first subscript stay the same, only the last one changes
 quit $order(@g@(s1,x))
get2(g,s1,x,out)
 set out=$get(@g@(s1,x))
 quit
set2(g,s1,x,v)
 set @g@(s1,x)=v
 quit
 ;
batch(g,s1,x,n,out) ; batched: up to n subscripts after x, length-prefixed, in one call. The loop is M source
 ; naming the global outright, compiled once per global: GT.M caches what XECUTE compiles, by its text, and
 ; a direct reference is faster than @g@(s1,y) on every node.
 new i,y
 set out="",y=x
 xecute "for i=1:1:n set y=$order("_$$ref(g,s1)_") quit:y=""""  set out=out_$char($length(y))_y"
 quit
getbatch(g,s1,x,n,out) ; up to n (subscript, value) pairs after x; values are length-prefixed in 3 bytes
 ; (an M string holds up to 1 MiB); stops early rather than pass 1 MiB
 new i,y,v,l,r
 set out="",y=x,r=$$ref(g,s1)
 xecute "for i=1:1:n set y=$order("_r_") quit:y=""""  set v=$get("_r_"),l=$length(v),out=out_$char($length(y))_y_$char(l\65536,l\256#256,l#256)_v quit:$length(out)>786432"
 quit
ref(g,s1) ; the M source of the node g(s1,y), s1 quoted as M quotes it
 new r
 set r=$name(@g@(s1))
 quit $extract(r,1,$length(r)-1)_",y)"
setbatch(g,s1,in) ; set the (subscript, value) pairs of in, encoded as getbatch writes them
 new p,l,y,e
 set p=1,e=$length(in)
 for  quit:p>e  do
 . set l=$ascii(in,p),y=$extract(in,p+1,p+l),p=p+l+1
 . set l=$ascii(in,p)*65536+($ascii(in,p+1)*256)+$ascii(in,p+2)
 . set @g@(s1,y)=$extract(in,p+3,p+2+l),p=p+3+l
 quit
