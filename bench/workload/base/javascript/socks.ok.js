const [a, b] = require('fs').readFileSync(0, 'utf8').trim().split(' ').map(Number);
const diff = Math.min(a, b);
const same = Math.floor((Math.max(a, b) - diff) / 2);
console.log(diff + ' ' + same);
